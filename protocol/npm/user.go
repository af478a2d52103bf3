package npm

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// whoami is GET /-/whoami.
func (h *handler) whoami(req *request) error {
	if req.cred != credAdmin {
		return unauthorized(req.cred, "ask who you are")
	}
	writeJSON(req.w, http.StatusOK, map[string]string{"username": h.opts.AdminUser})
	return nil
}

// profile is GET /-/npm/v1/user (npm profile get).
func (h *handler) profile(req *request) error {
	if req.cred != credAdmin {
		return unauthorized(req.cred, "read the profile")
	}
	if req.r.Method != http.MethodGet {
		return methodNotAllowed(req.r)
	}
	writeJSON(req.w, http.StatusOK, map[string]any{
		"tfa": false, "name": h.opts.AdminUser, "email": "", "email_verified": false,
		"created": "", "updated": "", "cidr_whitelist": nil, "fullname": "",
	})
	return nil
}

// getUser is GET /-/user/org.couchdb.user:<name> (step 3 of npm's login
// fallback after a 409, which this registry never sends; answered anyway).
func (h *handler) getUser(req *request, user string) error {
	if req.cred != credAdmin {
		return unauthorized(req.cred, "read users")
	}
	writeJSON(req.w, http.StatusOK, map[string]string{"_id": "org.couchdb.user:" + user, "name": user})
	return nil
}

// login is npm's legacy (CouchDB) login and adduser: PUT
// /-/user/org.couchdb.user:<name>[/-rev/<rev>] with {"name", "password"}.
// Until access control lands the only credential is the admin token: a
// password equal to it (or a request already carrying it) gets it back as
// the npm token, which npm writes to .npmrc as _authToken. No password hash
// is involved: the check is one sha256 and a constant-time compare.
func (h *handler) login(req *request, user string) error {
	raw, err := io.ReadAll(http.MaxBytesReader(req.w, req.r.Body, 64<<10))
	if err != nil {
		return errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	var body struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	if body.Name == "" {
		body.Name = user
	}
	if req.cred != credAdmin && !h.checkSecret(body.Password) {
		return errorf(http.StatusUnauthorized, "incorrect username or password: the password is the registry token")
	}
	writeJSON(req.w, http.StatusCreated, map[string]string{
		"ok":    "you are authenticated as '" + body.Name + "'",
		"token": h.opts.AdminToken,
	})
	return nil
}

// search is GET /-/v1/search?text=&size=&from= over the repository's
// active packages (name, description and keywords of the latest version).
func (h *handler) search(req *request) error {
	repo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	q := req.r.URL.Query()
	size := atoiBounded(q.Get("size"), 20, 1, 250)
	from := atoiBounded(q.Get("from"), 0, 0, 10000)
	text := q.Get("text")
	if len(text) > 1024 {
		return errorf(http.StatusBadRequest, "search text is longer than 1024 bytes")
	}
	hits, total, err := h.st.NpmSearch(req.r.Context(), repo, text, from, size)
	if err != nil {
		return err
	}
	base := h.registryURL(req.r, repo)
	objects := make([]map[string]any, 0, len(hits))
	for _, hit := range hits {
		scope := "unscoped"
		if s, _, ok := splitName(hit.Name); ok {
			scope = s
		}
		kw := hit.Keywords
		if kw == nil {
			kw = []string{}
		}
		publisher := map[string]string{"username": hit.Publisher, "email": ""}
		objects = append(objects, map[string]any{
			"package": map[string]any{
				"name":        hit.Name,
				"scope":       scope,
				"version":     hit.Version,
				"description": hit.Description,
				"keywords":    kw,
				"date":        hit.Date.UTC().Format(time.RFC3339Nano),
				"links":       map[string]string{"npm": base + "/" + hit.Name},
				"publisher":   publisher,
				"maintainers": []map[string]string{publisher},
			},
			"score":       map[string]any{"final": 1, "detail": map[string]any{"quality": 1, "popularity": 1, "maintenance": 1}},
			"searchScore": 1,
			"flags":       map[string]any{},
		})
	}
	writeJSON(req.w, http.StatusOK, map[string]any{
		"objects": objects,
		"total":   total,
		"time":    time.Now().UTC().Format(time.RFC1123),
	})
	return nil
}

func atoiBounded(s string, def, lo, hi int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return max(lo, min(hi, n))
}
