package faketelegram

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func call(t *testing.T, s *Server, token, method, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(s.URL+"/bot"+token+"/"+method, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

func TestFakeBotAPI(t *testing.T) {
	s := Start(t, "1:tok")
	got := make(chan *http.Request, 1)
	var body []byte
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		got <- r
	}))
	defer hook.Close()

	if st, out := call(t, s, "1:wrong", "getMe", `{}`); st != 401 || out["ok"] != false {
		t.Fatalf("wrong token: %d %v", st, out)
	}
	if st, _ := call(t, s, "1:tok", "setWebhook", `{"url":"`+hook.URL+`","secret_token":"sec"}`); st != 200 {
		t.Fatal("setWebhook")
	}
	if st := s.Deliver(t, Text(7, 5, 1, "hi")); st != 200 {
		t.Fatalf("deliver: %d", st)
	}
	r := <-got
	if r.Header.Get("X-Telegram-Bot-Api-Secret-Token") != "sec" || !strings.Contains(string(body), `"update_id":1`) {
		t.Fatalf("delivered %v %s", r.Header, body)
	}
	for range 2 {
		go http.Post(s.URL+"/bot1:tok/sendMessage", "application/json", strings.NewReader(`{"chat_id":"7","text":"x"}`))
	}
	calls := s.WaitFor(t, "sendMessage", 2, 5*time.Second)
	if len(calls) != 2 || calls[0].Params["chat_id"] != "7" {
		t.Fatalf("calls = %v", calls)
	}
	if st, out := call(t, s, "1:tok", "sendPhoto", `{"chat_id":"7","photo":"u"}`); st != 200 || out["result"].(map[string]any)["message_id"].(float64) != 1003 {
		t.Fatalf("sendPhoto: %v", out)
	}
	if st, _ := call(t, s, "1:tok", "banChatMember", `{}`); st != 400 {
		t.Fatal("unfaked method answered")
	}
}
