package model

import (
	"reflect"
	"testing"
)

func TestIntegrationTags(t *testing.T) {
	in := []struct {
		name       string
		alias      string
		tags, want map[string]string
	}{
		{"own keys prefixed", "tg", map[string]string{"chatId": "1", "id": "2"}, map[string]string{"tg:chatId": "1", "tg:id": "2"}},
		{"prefixed keys kept", "tg", map[string]string{"slack:x": "1"}, map[string]string{"slack:x": "1"}},
		{"no alias: unchanged", "", map[string]string{"a": "1"}, map[string]string{"a": "1"}},
	}
	for _, c := range in {
		if got := IntegrationTagsIn(c.alias, c.tags); !reflect.DeepEqual(got, c.want) {
			t.Errorf("in, %s: %v, want %v", c.name, got, c.want)
		}
	}
	out := []struct {
		name       string
		alias      string
		tags, want map[string]string
	}{
		{"own keys without the prefix", "tg", map[string]string{"tg:chatId": "1"}, map[string]string{"chatId": "1"}},
		{"another integration's left out", "tg", map[string]string{"slack:x": "1", "tg:y": "2"}, map[string]string{"y": "2"}},
		{"the bot's unprefixed kept", "tg", map[string]string{"topic": "a"}, map[string]string{"topic": "a"}},
		{"own wins over the bot's of the same name", "tg", map[string]string{"id": "bot", "tg:id": "own"}, map[string]string{"id": "own"}},
	}
	for _, c := range out {
		if got := IntegrationTagsOut(c.alias, c.tags); !reflect.DeepEqual(got, c.want) {
			t.Errorf("out, %s: %v, want %v", c.name, got, c.want)
		}
	}
}
