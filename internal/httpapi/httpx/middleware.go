package httpx

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/parley-bots/parley/internal/model"
)

// LimitBody refuses bodies above limit bytes with 413: at once when the
// declared Content-Length is too big (the body is not read), and while
// reading otherwise.
func LimitBody(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			WriteError(w, r, TooLarge(limit))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status and size of a response. Unwrap lets
// http.ResponseController reach Flush and deadlines of the real writer.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// AccessLog gives the request its id (a sane incoming X-Request-Id, or a
// new one), returned in the X-Request-Id header and carried by every log
// line of the request (the context's Logger) and its error body; logs one
// line per request with its status and duration; and turns panics into 500
// responses.
//
// unavailable (may be nil) tells the errors that are the database being
// unavailable for now: WriteError answers them 503 with Retry-After
// instead of 500.
func AccessLog(log *slog.Logger, unavailable func(error) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := requestIDFor(r)
		w.Header().Set(RequestIDHeader, id)
		rec := &statusRecorder{ResponseWriter: w}
		info := &requestInfo{id: id, base: log, unavailable: unavailable}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				info.logger().Error("panic in handler", "panic", fmt.Sprint(p), "method", r.Method, "path", r.URL.Path)
				if rec.status == 0 {
					WriteError(rec, r, fmt.Errorf("panic: %v", p))
				}
			}
			if !log.Enabled(r.Context(), slog.LevelInfo) {
				return
			}
			log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", rec.status),
				slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", time.Since(start)),
				slog.String("remote", r.RemoteAddr),
			)
		}()
		next.ServeHTTP(rec, r)
	})
}

// CORS answers preflights and lets browsers read responses. The origin is
// echoed (never "*") because the Botpress clients send credentials.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if origin := r.Header.Get("Origin"); origin != "" {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "Content-Type, Retry-After, X-Request-Id")
		}
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
				h.Set("Access-Control-Allow-Headers", req)
			} else {
				h.Set("Access-Control-Allow-Headers", "content-type, authorization, x-user-key, x-workspace-id, x-bot-id")
			}
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusOK)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// NoRoute answers requests that match no operation.
func NoRoute(w http.ResponseWriter, r *http.Request) { WriteError(w, r, NoRouteError(r)) }

// NoRouteError is the error of a request that matches no operation.
func NoRouteError(r *http.Request) error {
	return model.Errorf(model.ErrMethodNotFound, "no operation %s %s", r.Method, r.URL.Path)
}

// BearerToken returns the token of an "Authorization: Bearer" header.
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
