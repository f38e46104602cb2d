package httpx

import (
	"testing"

	"github.com/parley-bots/parley/internal/model"
)

func TestKeyedLimiter(t *testing.T) {
	l := NewKeyedLimiter("user", 1, 3)
	for i := 0; i < 3; i++ {
		if err := l.Allow("a"); err != nil {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
	}
	err := l.Allow("a")
	if model.TypeOf(err) != model.ErrRateLimited {
		t.Fatalf("over the burst: %v", err)
	}
	if err := l.Allow("b"); err != nil {
		t.Fatalf("another key: %v", err)
	}
	var nilLimiter *KeyedLimiter
	if nilLimiter.Allow("x") != nil || NewKeyedLimiter("bot", 0, 0) != nil {
		t.Fatal("no limit must allow everything")
	}
}
