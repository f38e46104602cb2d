// Package faketelegram is a Telegram Bot API on loopback for tests: it
// stands in for Telegram's servers (never for Parley). It answers the
// methods the Telegram integration calls (setWebhook, deleteWebhook, getMe,
// getFile, sendMessage, sendPhoto, sendChatAction, answerCallbackQuery),
// records every call, and delivers updates to the webhook URL registered
// with setWebhook, with its secret token, as Telegram does.
//
// Point the integration at it with the configuration
// { botToken: s.Token, apiBaseUrl: s.URL }.
package faketelegram

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one recorded Bot API call.
type Call struct {
	Method string
	Params map[string]any
}

// Server is the fake Bot API.
type Server struct {
	URL   string
	Token string

	mu        sync.Mutex
	calls     []Call
	webhook   string
	secret    string
	nextMsgID int64
	updateID  int64
	changed   chan struct{}
}

// Start starts a fake Bot API that accepts token; it stops with the test.
func Start(t testing.TB, token string) *Server {
	s := &Server{Token: token, nextMsgID: 1000, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || r.Method != http.MethodPost {
		reply(w, 404, map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
		return
	}
	if token != s.Token {
		reply(w, 401, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	params := map[string]any{}
	if err := json.NewDecoder(r.Body).Decode(&params); err != nil && err.Error() != "EOF" {
		reply(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params})
	var result any = true
	switch method {
	case "setWebhook":
		s.webhook, _ = params["url"].(string)
		s.secret, _ = params["secret_token"].(string)
	case "deleteWebhook":
		s.webhook, s.secret = "", ""
	case "getMe":
		result = map[string]any{"id": 4242, "is_bot": true, "first_name": "Parley Test", "username": "parley_test_bot"}
	case "getFile":
		id, _ := params["file_id"].(string)
		result = map[string]any{"file_id": id, "file_path": "photos/" + id + ".jpg"}
	case "sendMessage", "sendPhoto":
		s.nextMsgID++
		result = map[string]any{"message_id": s.nextMsgID, "chat": map[string]any{"id": params["chat_id"]}, "date": time.Now().Unix()}
	case "sendChatAction", "answerCallbackQuery":
	default:
		s.mu.Unlock()
		reply(w, 400, map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: method " + method + " is not faked"})
		return
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	reply(w, 200, map[string]any{"ok": true, "result": result})
}

// Calls returns the recorded calls of method ("" for all), in order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitFor waits until method was called at least n times and returns its
// calls; it fails the test after timeout.
func (s *Server) WaitFor(t testing.TB, method string, n int, timeout time.Duration) []Call {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if calls := s.Calls(method); len(calls) >= n {
			return calls
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("telegram: %d %s calls after %s, want %d (all calls: %v)", len(s.Calls(method)), method, timeout, n, s.Calls(""))
			return nil
		}
	}
}

// Webhook returns the URL and secret token of the last setWebhook ("" when
// none or deleted).
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook, s.secret
}

// Deliver POSTs an update to the registered webhook as Telegram does (with
// the secret token header, update_id set when absent) and returns the
// status. It fails the test when no webhook is set.
func (s *Server) Deliver(t testing.TB, update map[string]any) int {
	t.Helper()
	url, secret := s.Webhook()
	if url == "" {
		t.Fatal("telegram: no webhook set (setWebhook was not called)")
	}
	s.mu.Lock()
	s.updateID++
	if _, ok := update["update_id"]; !ok {
		update["update_id"] = s.updateID
	}
	s.mu.Unlock()
	body, _ := json.Marshal(update)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("telegram: deliver: %v", err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Text is a text message update from user userID in chat chatID.
func Text(chatID, userID, messageID int64, text string) map[string]any {
	return map[string]any{"message": map[string]any{"message_id": messageID, "date": time.Now().Unix(), "text": text,
		"chat": map[string]any{"id": chatID, "type": "private"},
		"from": map[string]any{"id": userID, "is_bot": false, "first_name": "Test", "last_name": "User"}}}
}

// Click is a button click (callback_query) with data on the bot's message
// messageID in chat chatID.
func Click(chatID, userID, messageID int64, id, data string) map[string]any {
	return map[string]any{"callback_query": map[string]any{"id": id, "data": data,
		"from":    map[string]any{"id": userID, "is_bot": false, "first_name": "Test"},
		"message": map[string]any{"message_id": messageID, "date": time.Now().Unix(), "chat": map[string]any{"id": chatID, "type": "private"}}}}
}
