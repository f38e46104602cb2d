package workflow

import (
	"context"
	"testing"
)

// BenchmarkEchoTurn: a message turn of the workflow echo bot parley-bench
// runs (-bot workflow): its start node answers and the dialog ends.
func BenchmarkEchoTurn(b *testing.B) {
	bot, err := Parse([]byte(`{"workflows":{"main":{"nodes":{"s":{"type":"start","cards":[
  {"type":"message","payload":"echo {{ event.preview }}"}]}}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	l := NewLocal(testEngine, bot)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sent, err := l.Say(ctx, "hi")
		if err != nil || len(sent) != 1 || sent[0]["text"] != "echo hi" {
			b.Fatalf("sent %v, %v", sent, err)
		}
	}
}
