package integrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/parley-bots/parley/internal/model"
)

// compileSchema compiles a JSON schema of a definition (what
// @botpress/sdk's zui produces: draft-07 with x-zui annotations).
func compileSchema(schema any) (*jsonschema.Schema, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	const url = "parley://integration/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

var printer = message.NewPrinter(language.English)

// validateValue checks v against a definition's schema: a 400 names the
// field under path ("integrations.telegram.configuration.botToken: ...").
func validateValue(path string, schema any, v any) error {
	if schema == nil {
		return nil
	}
	sch, err := compileSchema(schema)
	if err != nil {
		return model.Invalid("%s: the integration's schema does not compile: %v", path, err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return model.Invalid("%s: %v", path, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return model.Invalid("%s: %v", path, err)
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	field := path
	if len(ve.InstanceLocation) > 0 {
		field += "." + strings.Join(ve.InstanceLocation, ".")
	}
	return model.Invalid("%s: %s", field, ve.ErrorKind.LocalizedString(printer))
}
