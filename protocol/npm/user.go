package npm

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

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
	hits, total, err := h.npm.Search(req.r.Context(), repo, text, from, size)
	if err != nil {
		return err
	}
	writeSearch(req, h.registryURL(req.r, repo), hits, total)
	return nil
}

// writeSearch answers a search: the hits in npm's v1 search format,
// linked under the registry URL base.
func writeSearch(req *request, base string, hits []npmstore.SearchHit, total int) {
	objects := make([]map[string]any, 0, len(hits))
	for _, hit := range hits {
		scope := "unscoped"
		if s, _, ok := npmname.Split(hit.Name); ok {
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
}

func atoiBounded(s string, def, lo, hi int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return def
	}
	return max(lo, min(hi, n))
}
