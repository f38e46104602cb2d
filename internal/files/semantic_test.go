package files

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

func passages(ids string) []*model.Passage {
	var out []*model.Passage
	for _, id := range strings.Fields(ids) {
		out = append(out, &model.Passage{FileID: "f", ID: id, Content: id})
	}
	return out
}

// TestFuse: reciprocal rank fusion favours passages both rankings hold,
// keeps each passage once, and cuts at the limit.
func TestFuse(t *testing.T) {
	for _, tc := range []struct {
		name, fullText, semantic string
		limit                    int
		want                     string
	}{
		{"both agree", "a b c", "a b c", 10, "a b c"},
		{"in both beats first of one", "a b c", "d c", 10, "c a d b"},
		{"semantic only", "", "x y", 10, "x y"},
		{"full text only", "p q", "", 10, "p q"},
		{"limit; ties keep the full-text order", "a b c", "c b a", 2, "a c"},
		{"same rank in each: full text first", "a", "b", 10, "a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fuse(passages(tc.fullText), passages(tc.semantic), tc.limit)
			var ids []string
			for i, p := range got {
				ids = append(ids, p.ID)
				if i > 0 && p.Score > got[i-1].Score {
					t.Fatalf("scores not decreasing: %v", got)
				}
			}
			if s := strings.Join(ids, " "); s != tc.want {
				t.Fatalf("fused %q, want %q", s, tc.want)
			}
		})
	}
}

// countingEmbedder stands in for a remote embeddings endpoint.
type countingEmbedder struct {
	calls int
	fail  bool
}

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls++
	if e.fail {
		return nil, errors.New("down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

// TestQueryVector: a query is embedded once (a turn searches each
// knowledge base with the same text); after a failure the endpoint is
// left alone for a while, so turns do not each wait for it.
func TestQueryVector(t *testing.T) {
	ctx := context.Background()
	emb := &countingEmbedder{}
	s := &Passages{models: Models{Embedder: emb}}
	for range 3 {
		if v, err := s.queryVector(ctx, "refunds"); err != nil || v[0] != 7 {
			t.Fatalf("%v %v", v, err)
		}
	}
	if emb.calls != 1 {
		t.Fatalf("%d calls for one query, want 1", emb.calls)
	}
	emb.fail = true
	if _, err := s.queryVector(ctx, "shipping"); err == nil || err == errPaused {
		t.Fatalf("first failure: %v", err)
	}
	if _, err := s.queryVector(ctx, "returns"); err != errPaused {
		t.Fatalf("after a failure: %v, want errPaused", err)
	}
	if emb.calls != 2 {
		t.Fatalf("%d calls, want 2 (none while paused)", emb.calls)
	}
	if v, err := s.queryVector(ctx, "refunds"); err != nil || v[0] != 7 {
		t.Fatalf("cached vector while paused: %v %v", v, err)
	}
	s.embedDown.until = time.Now() // the pause is over
	emb.fail = false
	if _, err := s.queryVector(ctx, "returns"); err != nil || emb.calls != 3 {
		t.Fatalf("after the pause: %v, %d calls", err, emb.calls)
	}
}
