package turns

import "testing"

func TestIsBundle(t *testing.T) {
	for _, tt := range []struct {
		code string
		want bool
	}{
		{"bot.on.message('*', async () => {})", false},
		{"const exportsList = []; bot.on.message('*', async () => {})", false},
		{"module.exports = { bot }", true},
		{"exports.handler = async () => {}", true},
		{"// parley:node\nrequire('x')", true},
		{"  // parley:node", true},
		{"x = 1 // parley:nodes", false},
	} {
		if got := IsBundle(tt.code); got != tt.want {
			t.Errorf("IsBundle(%q) = %v, want %v", tt.code, got, tt.want)
		}
	}
}
