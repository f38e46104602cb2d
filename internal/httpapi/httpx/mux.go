package httpx

import (
	"context"
	"net/http"
)

// Mux is an http.ServeMux that tells the request's RouteRecorder (set by
// the metrics middleware) which pattern served the request: the innermost
// of nested muxes wins, so a mounted API reports its operation's pattern
// ("POST /chat/{wh}/messages"), never the raw path.
type Mux struct{ *http.ServeMux }

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{http.NewServeMux()} }

func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.ServeMux.ServeHTTP(w, r) // sets r.Pattern on this request
	if rec, ok := r.Context().Value(routeKey{}).(*RouteRecorder); ok && rec.Pattern == "" {
		rec.Pattern = r.Pattern
	}
}

// RouteRecorder receives the pattern of the route that served a request.
type RouteRecorder struct{ Pattern string }

type routeKey struct{}

// WithRouteRecorder returns a context in which Mux reports its route.
func WithRouteRecorder(ctx context.Context) (context.Context, *RouteRecorder) {
	rec := &RouteRecorder{}
	return context.WithValue(ctx, routeKey{}, rec), rec
}
