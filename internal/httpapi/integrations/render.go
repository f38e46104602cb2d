package integrations

import (
	"github.com/parley-bots/parley/internal/integrations"
	"github.com/parley-bots/parley/internal/model"
)

// render is the Admin API's Integration object: the stored definition
// with the defaults @botpress/client's types promise.
func render(d *model.IntegrationDef) map[string]any {
	v := renderPublic(d)
	v["signingSecret"] = d.SigningSecret
	return v
}

// renderPublic is the hub's Integration: no signing secret.
func renderPublic(d *model.IntegrationDef) map[string]any {
	spec := d.Spec
	obj := func(key string) map[string]any {
		if m, ok := spec[key].(map[string]any); ok {
			return m
		}
		return map[string]any{}
	}
	configuration := withConfigurationDefaults(obj("configuration"))
	configurations := map[string]any{}
	for k, c := range obj("configurations") {
		if m, ok := c.(map[string]any); ok {
			configurations[k] = withConfigurationDefaults(m)
		}
	}
	channels := map[string]any{}
	for k, c := range obj("channels") {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		ch := copyMap(m)
		conv := copyMap(asMap(m["conversation"]))
		if _, ok := conv["tags"]; !ok {
			conv["tags"] = map[string]any{}
		}
		if _, ok := conv["creation"]; !ok {
			conv["creation"] = map[string]any{"enabled": false, "requiredTags": []string{}}
		}
		ch["conversation"] = conv
		msg := copyMap(asMap(m["message"]))
		if _, ok := msg["tags"]; !ok {
			msg["tags"] = map[string]any{}
		}
		ch["message"] = msg
		if _, ok := ch["messages"]; !ok {
			ch["messages"] = map[string]any{}
		}
		channels[k] = ch
	}
	user := copyMap(obj("user"))
	if _, ok := user["tags"]; !ok {
		user["tags"] = map[string]any{}
	}
	if _, ok := user["creation"]; !ok {
		user["creation"] = map[string]any{"enabled": false, "requiredTags": []string{}}
	}
	identifier := obj("identifier")
	v := map[string]any{
		"id": d.ID, "createdAt": model.FormatTime(d.CreatedAt), "updatedAt": model.FormatTime(d.UpdatedAt),
		"identifier": identifier, "url": d.URL, "name": d.Name, "version": d.Version,
		"interfaces": obj("interfaces"), "configuration": configuration, "configurations": configurations,
		"channels": channels, "states": obj("states"), "events": obj("events"), "actions": obj("actions"),
		"user": user, "entities": obj("entities"), "dev": d.Dev, "title": titleOf(d), "description": d.Description,
		"iconUrl": d.Icon, "readmeUrl": d.Readme, "public": d.Public, "visibility": d.Visibility,
		"verificationStatus": "approved", "lifecycleStatus": "published", "secrets": integrations.SecretNames(d),
	}
	if d.MaxExecutionTime > 0 {
		v["maxExecutionTime"] = d.MaxExecutionTime
	}
	if a, ok := spec["attributes"].(map[string]any); ok {
		v["attributes"] = a
	}
	if s, ok := spec["sdkVersion"].(string); ok {
		v["sdkVersion"] = s
	}
	return v
}

// renderSummary is an item of listIntegrations.
func renderSummary(d *model.IntegrationDef) map[string]any {
	v := map[string]any{"id": d.ID, "name": d.Name, "version": d.Version, "createdAt": model.FormatTime(d.CreatedAt),
		"updatedAt": model.FormatTime(d.UpdatedAt), "title": titleOf(d), "description": d.Description, "iconUrl": d.Icon,
		"public": d.Public, "visibility": d.Visibility, "verificationStatus": "approved", "lifecycleStatus": "published"}
	if a, ok := d.Spec["attributes"].(map[string]any); ok {
		v["attributes"] = a
	}
	return v
}

func titleOf(d *model.IntegrationDef) string {
	if d.Title != "" {
		return d.Title
	}
	return d.Name
}

func withConfigurationDefaults(m map[string]any) map[string]any {
	c := copyMap(m)
	id := copyMap(asMap(c["identifier"]))
	if _, ok := id["required"]; !ok {
		id["required"] = false
	}
	c["identifier"] = id
	if _, ok := c["schema"]; !ok {
		c["schema"] = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return c
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
