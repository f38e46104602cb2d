package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// Fuzz targets of the payload validators (issue 12): no panic; a refusal
// is an InvalidPayload *Error; what is accepted is valid JSON and a fixed
// point (validating the output again gives the same bytes).

func payloadSeeds(f *testing.F) {
	for _, s := range []string{`{"type":"text","text":"hi"}`, `{"type":"image","imageUrl":"u"}`,
		`{"type":"location","latitude":1.5,"longitude":-2,"address":""}`,
		`{"type":"card","title":"t","actions":[{"action":"postback","label":"l","value":"v"}]}`,
		`{"type":"carousel","items":[{"title":"a","actions":[]}]}`, `{"type":"choice","text":"q","options":[{"label":"a","value":"b"}]}`,
		`{"type":"bloc","items":[{"type":"text","payload":{"text":"x"}}]}`, `{"type":"text","text":"a","value":"v"}`,
		`{}`, `[]`, `null`, `{"type":"text","text":""}`, `{"a":{"b":[1,2,{"c":null}]}}`, `{"type":"text","text":"\u0000\ud800"}`,
		`{"type":"text","text":"x"} trailing`, ` {"type" : "markdown", "markdown" : "*x*" } `} {
		f.Add([]byte(s))
	}
}

func checkValidated(t *testing.T, name string, validate func(json.RawMessage) (json.RawMessage, error), raw []byte) {
	out, err := validate(raw)
	if err != nil {
		var me *Error
		if !errors.As(err, &me) || me.Type != ErrInvalidPayload {
			t.Fatalf("%s(%q): error %#v is not an InvalidPayload *Error", name, raw, err)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("%s(%q) = %q: not JSON", name, raw, out)
	}
	again, err := validate(out)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("%s(%q) = %q, which validates to %q, %v", name, raw, out, again, err)
	}
}

func FuzzValidateMessagePayload(f *testing.F) {
	payloadSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkValidated(t, "ValidateMessagePayload", ValidateMessagePayload, raw)
		checkValidated(t, "ValidateWebchatMessagePayload", ValidateWebchatMessagePayload, raw)
	})
}

func FuzzValidateEventPayload(f *testing.F) {
	payloadSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkValidated(t, "ValidateEventPayload", ValidateEventPayload, raw)
		checkValidated(t, "ValidateMetadata", ValidateMetadata, raw)
		if out, err := ValidateEventPayload(raw); err == nil {
			var m map[string]any
			if json.Unmarshal(out, &m) != nil || m == nil {
				t.Fatalf("ValidateEventPayload(%q) = %q: not a JSON object", raw, out)
			}
		}
	})
}
