package files

import (
	"strings"
	"testing"

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
