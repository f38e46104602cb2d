// Package openapi serves the OpenAPI 3 document of the HTTP interfaces
// Parley serves (GET /openapi.json): every operation of the Admin, Chat and
// Webchat APIs, the operations endpoints and the pages. openapi.json is
// kept by hand; internal/app's TestOpenAPIDocument checks that it is valid
// OpenAPI 3 and that every route registered on the muxes appears in it.
package openapi

import (
	_ "embed"
	"encoding/json"
	"net/http"
)

//go:embed openapi.json
var document []byte

// Document returns the document with servers set to publicURL.
func Document(publicURL string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, err
	}
	doc["servers"] = []map[string]string{{"url": publicURL}}
	return json.MarshalIndent(doc, "", "  ")
}

// Handler serves the document for a server whose public URL is publicURL.
func Handler(publicURL string) (http.Handler, error) {
	body, err := Document(publicURL)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(body)
	}), nil
}
