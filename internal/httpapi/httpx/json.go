package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/parley-bots/parley/internal/model"
)

// WriteJSON writes v as a JSON response with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		buf = []byte(`{"id":"err_marshal","code":500,"type":"Internal","message":"response could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf)
}

// JSON writes v with status, for handlers that return an error: the
// error is nil, the response is written.
func JSON(w http.ResponseWriter, status int, v any) error {
	WriteJSON(w, status, v)
	return nil
}

// Handler is an HTTP handler that returns its error instead of writing
// it; Serve writes it, in the one place every API shares.
type Handler func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP implements http.Handler.
func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h(w, r); err != nil {
		WriteError(w, r, err)
	}
}

// Empty is the body of operations that return nothing: the clients expect
// an object, never an empty body.
var Empty = struct{}{}

// Decode reads the JSON request body into dst. An empty body decodes as {}.
// When strict is true, properties dst does not declare are refused. Errors
// are InvalidPayload with a message naming the field, or PayloadTooLarge.
func Decode(r *http.Request, dst any, strict bool) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return TooLarge(tooBig.Limit)
		}
		return model.Invalid("could not read the request body: %v", err)
	}
	return DecodeBytes(data, dst, strict)
}

// DecodeBytes is Decode for a body already read.
func DecodeBytes(data []byte, dst any, strict bool) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		data = []byte("{}")
	}
	if data[0] != '{' {
		return model.Invalid("the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	// Anything after the object (even a stray "}") makes the body invalid.
	if _, err := dec.Token(); err != io.EOF {
		return model.Invalid("malformed JSON: unexpected data after the top-level object")
	}
	return nil
}

// decodeError turns encoding/json errors into messages that name the field.
func decodeError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return model.Invalid("malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return model.Invalid("%s: expected %s, got JSON %s", field, jsonTypeName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return model.Invalid("malformed JSON: unexpected end of input")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return model.Invalid("%s: unknown property", strings.Trim(name, `"`))
	}
	var me *model.Error
	if errors.As(err, &me) {
		return me
	}
	return model.Invalid("malformed JSON: %v", err)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "int", "int64", "int32", "float64", "float32", "uint", "uint64":
		return "number"
	case "bool":
		return "boolean"
	case "ptr", "interface":
		return "value"
	}
	return kind
}

// TooLarge is the error for a body above limit bytes.
func TooLarge(limit int64) *model.Error {
	return model.Errorf(model.ErrPayloadTooLarge, "the request body exceeds the limit of %s", humanBytes(limit))
}

func humanBytes(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
