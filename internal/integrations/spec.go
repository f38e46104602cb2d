package integrations

import (
	"net/url"
	"regexp"
	"slices"

	"github.com/parley-bots/parley/internal/model"
)

// A definition as createIntegration and updateIntegration take it: what
// is checked and how an update merges.

// Definition is the body of createIntegration and updateIntegration as
// decoded JSON, keyed by wire names.
type Definition map[string]any

// specKeys are the parts of a definition kept as they are (Spec).
var specKeys = []string{"configuration", "configurations", "states", "events", "actions", "entities", "identifier",
	"channels", "user", "interfaces", "extraOperations", "sdkVersion", "attributes", "layers"}

// mapKeys are the spec parts that are maps of named items: updateIntegration
// merges them, a null item removes it.
var mapKeys = []string{"configurations", "states", "events", "actions", "entities", "channels", "interfaces", "extraOperations", "attributes"}

// reservedNames are the built-in integrations' names.
var reservedNames = []string{model.IntegrationChat, model.IntegrationWebchat, "webhook"}

var (
	namePattern    = regexp.MustCompile(`^([a-z0-9][a-z0-9-]{0,49}/)?[a-z0-9][a-z0-9_-]{0,99}$`)
	versionPattern = regexp.MustCompile(`^\d{1,9}\.\d{1,9}\.\d{1,9}(-[0-9A-Za-z.-]+)?$`)
	itemPattern    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,99}$`)
)

// MaxCode is the largest integration bundle accepted (the Admin API's
// body limit bounds it too).
const MaxCode = 45 << 20

// build validates a definition and applies it to d (all of it for a
// creation; update merges).
func (s *Definitions) build(d *model.IntegrationDef, in Definition, update bool) error {
	str := func(key string) (string, bool, error) {
		v, ok := in[key]
		if !ok || v == nil {
			return "", ok, nil
		}
		sv, isStr := v.(string)
		if !isStr {
			return "", true, model.Invalid("%s: must be a string", key)
		}
		return sv, true, nil
	}
	if !update {
		name, _, err := str("name")
		if err != nil {
			return err
		}
		if !namePattern.MatchString(name) {
			return model.Invalid("name: required, lowercase letters, digits, '-' and '_' (optionally prefixed by a workspace handle and '/')")
		}
		if slices.Contains(reservedNames, name) {
			return model.Invalid("name: %q is a built-in integration of Parley", name)
		}
		version, _, err := str("version")
		if err != nil {
			return err
		}
		if !versionPattern.MatchString(version) {
			return model.Invalid("version: required, a semantic version such as 0.1.0")
		}
		d.Name, d.Version = name, version
		if v, ok := in["dev"]; ok && v != nil {
			b, isBool := v.(bool)
			if !isBool {
				return model.Invalid("dev: must be a boolean")
			}
			d.Dev = b
		}
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"title", &d.Title}, {"description", &d.Description}, {"icon", &d.Icon}, {"readme", &d.Readme}, {"code", &d.Code}, {"url", &d.URL}} {
		v, present, err := str(f.key)
		if err != nil {
			return err
		}
		if present {
			*f.dst = v
		}
	}
	if len(d.Code) > MaxCode {
		return model.Errorf(model.ErrPayloadTooLarge, "code: at most %d bytes", MaxCode)
	}
	if d.URL != "" {
		u, err := url.Parse(d.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return model.Invalid("url: must be an http or https URL")
		}
	}
	if d.Code != "" && s.bundles != nil {
		if err := s.bundles.Available(); err != nil {
			return model.Invalid("code: this server cannot run Node.js bundles: %v", err)
		}
	}
	if d.Code != "" && s.bundles == nil {
		return model.Invalid("code: this server does not run Node.js bundles; give a url instead")
	}
	if v, ok := in["public"]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return model.Invalid("public: must be a boolean")
		}
		d.Public = b
		if b {
			d.Visibility = "public"
		} else if d.Visibility == "public" {
			d.Visibility = "private"
		}
	}
	if v, present, err := str("visibility"); err != nil {
		return err
	} else if present && v != "" {
		if !slices.Contains([]string{"public", "private", "unlisted"}, v) {
			return model.Invalid("visibility: must be public, private or unlisted")
		}
		d.Visibility, d.Public = v, v == "public"
	}
	if d.Visibility == "" {
		d.Visibility = "private"
	}
	if v, ok := in["maxExecutionTime"]; ok && v != nil {
		n, isNum := v.(float64)
		if !isNum || n < 1 || n > 60 || n != float64(int(n)) {
			return model.Invalid("maxExecutionTime: must be an integer from 1 to 60")
		}
		d.MaxExecutionTime = int(n)
	}
	if v, ok := in["secrets"]; ok && v != nil {
		m, isMap := v.(map[string]any)
		if !isMap {
			return model.Invalid("secrets: must be an object")
		}
		if d.Secrets == nil {
			d.Secrets = map[string]string{}
		}
		for k, sv := range m {
			switch x := sv.(type) {
			case nil:
				delete(d.Secrets, k)
			case string:
				d.Secrets[k] = x
			default:
				return model.Invalid("secrets.%s: must be a string or null", k)
			}
		}
	}
	if d.Spec == nil {
		d.Spec = map[string]any{}
	}
	for _, k := range specKeys {
		v, ok := in[k]
		if !ok {
			continue
		}
		if update && slices.Contains(mapKeys, k) {
			d.Spec[k] = mergeItems(d.Spec[k], v)
			continue
		}
		if v == nil {
			delete(d.Spec, k)
		} else {
			d.Spec[k] = v
		}
	}
	return checkSpec(d.Spec)
}

// mergeItems merges a map of named items: a null item is removed.
func mergeItems(old, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	out := map[string]any{}
	if om, ok := old.(map[string]any); ok {
		for k, v := range om {
			out[k] = v
		}
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// checkSpec checks the shapes Parley relies on: schemas are objects that
// compile, channels have message types, actions input and output schemas,
// states a known type.
func checkSpec(spec map[string]any) error {
	obj := func(path string, v any) (map[string]any, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, model.Invalid("%s: must be an object", path)
		}
		return m, nil
	}
	items := func(key string) (map[string]any, error) {
		v, ok := spec[key]
		if !ok || v == nil {
			return nil, nil
		}
		m, err := obj(key, v)
		if err != nil {
			return nil, err
		}
		for name := range m {
			if !itemPattern.MatchString(name) {
				return nil, model.Invalid("%s.%s: names are letters, digits and '_', starting with a letter", key, name)
			}
		}
		return m, nil
	}
	schemaAt := func(path string, parent map[string]any, required bool) error {
		v, ok := parent["schema"]
		if !ok || v == nil {
			if required {
				return model.Invalid("%s.schema: required", path)
			}
			return nil
		}
		if _, err := obj(path+".schema", v); err != nil {
			return err
		}
		if _, err := compileSchema(v); err != nil {
			return model.Invalid("%s.schema: not a valid JSON schema: %v", path, err)
		}
		return nil
	}
	if v, ok := spec["configuration"]; ok && v != nil {
		m, err := obj("configuration", v)
		if err != nil {
			return err
		}
		if err := schemaAt("configuration", m, false); err != nil {
			return err
		}
	}
	confs, err := items("configurations")
	if err != nil {
		return err
	}
	for name, v := range confs {
		m, err := obj("configurations."+name, v)
		if err != nil {
			return err
		}
		if err := schemaAt("configurations."+name, m, false); err != nil {
			return err
		}
	}
	channels, err := items("channels")
	if err != nil {
		return err
	}
	for name, v := range channels {
		ch, err := obj("channels."+name, v)
		if err != nil {
			return err
		}
		msgs, err := obj("channels."+name+".messages", ch["messages"])
		if err != nil {
			return err
		}
		for typ, mv := range msgs {
			mm, err := obj("channels."+name+".messages."+typ, mv)
			if err != nil {
				return err
			}
			if err := schemaAt("channels."+name+".messages."+typ, mm, true); err != nil {
				return err
			}
		}
	}
	actions, err := items("actions")
	if err != nil {
		return err
	}
	for name, v := range actions {
		a, err := obj("actions."+name, v)
		if err != nil {
			return err
		}
		for _, io := range []string{"input", "output"} {
			m, err := obj("actions."+name+"."+io, a[io])
			if err != nil {
				return err
			}
			if err := schemaAt("actions."+name+"."+io, m, true); err != nil {
				return err
			}
		}
	}
	for _, key := range []string{"events", "entities"} {
		m, err := items(key)
		if err != nil {
			return err
		}
		for name, v := range m {
			e, err := obj(key+"."+name, v)
			if err != nil {
				return err
			}
			if err := schemaAt(key+"."+name, e, true); err != nil {
				return err
			}
		}
	}
	states, err := items("states")
	if err != nil {
		return err
	}
	for name, v := range states {
		st, err := obj("states."+name, v)
		if err != nil {
			return err
		}
		if t, _ := st["type"].(string); !slices.Contains([]string{"conversation", "user", "integration"}, t) {
			return model.Invalid("states.%s.type: must be conversation, user or integration", name)
		}
		if err := schemaAt("states."+name, st, true); err != nil {
			return err
		}
	}
	return nil
}
