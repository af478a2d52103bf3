package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// graphqlAs runs one operation with a token and returns the data and the
// first error code (empty when none).
func (s *server) graphqlAs(t testing.TB, token, query string) (json.RawMessage, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("graphql: %s: %v", resp.Status, err)
	}
	if len(out.Errors) > 0 {
		return out.Data, out.Errors[0].Extensions.Code
	}
	return out.Data, ""
}

// TestUITokensGC: an access token is created in the UI (its secret shown
// once, accepted by the API, gone from the page after Done) and revoked
// (then refused by the API); the GC kill switch is stopped with a reason
// and resumed. Screenshots go to artifactsDir (and docs).
func TestUITokensGC(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	b.open("/sign-in?next=%2Fn%2Facme%2Ftokens")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))

	// Access tokens: create one, its secret works once read from the page.
	b.see(heading("Access tokens"))
	b.see(text("No token yet."))
	b.typeInto("#token-name", "ci-reader")
	b.click(button("Create token"))
	b.see(text("Copy its secret now"))
	secret := b.eval(`document.querySelector('[aria-label="New token secret"] .copy-text').textContent`)
	if secret == "" {
		t.Fatal("no secret shown")
	}
	b.see(`//tr[@data-token="ci-reader"]`)
	b.docShot("34-access-tokens", "access-tokens")
	const viewer = `{ viewer { kind name } }`
	if data, code := s.graphqlAs(t, secret, viewer); code != "" || !strings.Contains(string(data), `"ci-reader"`) {
		t.Fatalf("the new token as viewer: %s %s", code, data)
	}
	b.click(button("Done, hide the secret"))
	b.gone(`//*[@aria-label="New token secret"]`)
	if strings.Contains(b.eval(`document.body.innerText`), secret) {
		t.Error("the secret is still on the page after Done")
	}
	// Revoke it: the API refuses it from then on.
	b.click(button("Revoke token ci-reader"))
	b.see(text("No token yet."))
	b.click(`//label[contains(normalize-space(.), "Show revoked tokens")]/input`)
	b.see(`//tr[@data-token="ci-reader"]//*[normalize-space()="revoked"]`)
	deadline := time.Now().Add(15 * time.Second) // the lookup cache holds a token up to 5 s
	for {
		_, code := s.graphqlAs(t, secret, viewer)
		if code == "UNAUTHENTICATED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revoked token still accepted (code %q)", code)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// GC: the kill switch stops and resumes deletion, with who and why.
	b.open("/n/acme/gc")
	b.see(heading("Garbage collection"))
	b.see(`//*[@data-testid="kill-switch"]//*[normalize-space()="deleting"]`)
	b.see(text("No excluded candidate."))
	b.typeInto("#gc-reason", "storage migration")
	b.click(button("Stop deleting"))
	b.see(`//*[@data-testid="kill-switch"]//*[normalize-space()="stopped"]`)
	b.see(text("storage migration"))
	b.docShot("35-gc-stopped", "garbage-collection")
	var gc struct {
		GarbageCollection struct {
			Enabled bool   `json:"enabled"`
			Reason  string `json:"reason"`
		} `json:"garbageCollection"`
	}
	if err := json.Unmarshal(s.graphql(t, `{ garbageCollection { enabled reason } }`, nil), &gc); err != nil {
		t.Fatal(err)
	}
	if gc.GarbageCollection.Enabled || gc.GarbageCollection.Reason != "storage migration" {
		t.Errorf("kill switch after Stop: %+v", gc.GarbageCollection)
	}
	b.click(button("Resume deleting"))
	b.see(`//*[@data-testid="kill-switch"]//*[normalize-space()="deleting"]`)

}
