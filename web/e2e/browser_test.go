package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's Chromium: $CHROMIUM if set, else the
// binaries of the chromium and chromium-headless-shell packages.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-headless-shell", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// requireChromium skips without Chromium on a developer machine, and fails
// in CI, where a skipped browser test would pass silently.
func requireChromium(t testing.TB) string {
	t.Helper()
	p := chromiumPath()
	if p != "" {
		return p
	}
	testtools.Unavailable(t, "Chromium not found (set CHROMIUM or install it: apt-get update && apt-get install -y chromium fonts-dejavu-core)")
	return ""
}

// artifactsDir is where screenshots go: $E2E_ARTIFACTS, else
// web/e2e/screenshots (ignored by git).
func artifactsDir(t testing.TB) string {
	dir := os.Getenv("E2E_ARTIFACTS")
	if dir == "" {
		dir = "screenshots"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// docsDir is where the screenshots of the main screens committed to the
// repository are refreshed (`make web-screenshots` sets it to
// docs/screenshots); empty means they are left alone.
func docsDir(t testing.TB) string {
	dir := os.Getenv("E2E_DOCS_SCREENSHOTS")
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is one browser tab on the server, with step helpers that fail the
// test with the step's name.
type tab struct {
	t     testing.TB
	ctx   context.Context
	base  string
	shots string
	docs  string
	step  time.Duration

	mu       sync.Mutex
	problems []string // uncaught exceptions and CSP violations
}

// chromium is the one Chromium process the package's tests share, each
// test in a browser context of its own (separate cookies, storage and
// cache, like a fresh profile). Starting Chromium costs about a second of
// CPU; the tests start a dozen tabs.
var chromium struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab, parent of every test's
	cancel func()
	err    error
}

// startChromium starts the shared browser with the flags this machine
// needs (no sandbox as root, nothing that phones home) and a fresh profile.
func startChromium(execPath string) (context.Context, error) {
	chromium.once.Do(func() {
		profile, err := os.MkdirTemp("", "e2e-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(execPath),
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("no-first-run", true),
			chromedp.Flag("lang", "en-US"),
			chromedp.UserDataDir(profile),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelTab := chromedp.NewContext(actx)
		chromium.ctx = ctx
		chromium.cancel = func() {
			cancelTab()
			cancelAlloc()
			_ = os.RemoveAll(profile)
		}
		chromium.err = chromedp.Do(ctx) // starts the browser
	})
	return chromium.ctx, chromium.err
}

// stopChromium stops the shared browser, if a test started it.
func stopChromium() {
	if chromium.cancel != nil {
		chromium.cancel()
	}
}

// newBrowser opens a tab on the server, in a window of width x height and
// a browser context of its own, closed when the test ends.
func newBrowser(t testing.TB, base string, width, height int) *tab {
	t.Helper()
	execPath := requireChromium(t)
	parent, err := startChromium(execPath)
	if err != nil {
		t.Fatalf("start Chromium %s: %v", execPath, err)
	}
	ctx, cancelTab := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
	})
	b := &tab{t: t, ctx: ctx, base: base, shots: artifactsDir(t), docs: docsDir(t), step: 20 * time.Second}
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		t.Fatalf("open a tab in Chromium %s: %v", execPath, err)
	}
	// The tab's window gets the size the whole browser's had when each
	// test started its own: the viewport is that less the window's frame.
	win, err := chromedp.Call(ctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{})
	if err == nil {
		_, err = chromedp.CallBrowser(ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{
			WindowID: win.WindowID, Bounds: &browser.Bounds{Width: int64(width), Height: int64(height)}})
	}
	if err != nil {
		t.Fatalf("size the tab's window to %dx%d: %v", width, height, err)
	}
	// Clipboard access for the copy buttons, as a user would allow it.
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission:       &browser.PermissionDescriptor{Name: name},
			Setting:          browser.PermissionSettingGranted,
			Origin:           base,
			BrowserContextID: chromedp.FromContext(ctx).BrowserContextID,
		}); err != nil {
			t.Logf("grant %s: %v", name, err)
		}
	}
	// Accept every confirm() (delete, purge): a person would click OK.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") ||
				(m.Type == chromedp.ConsoleError && !strings.Contains(m.Text, "Failed to load resource")) {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s: %s", m.Type, m.Text))
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// checkConsole fails the test if the page threw or broke its CSP.
func (b *tab) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		b.t.Errorf("browser console: %s", p)
	}
	b.problems = nil
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.step)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed-" + sanitize(what))
		b.t.Fatalf("%s: %v (at %s)", what, err, b.location())
	}
}

func run[T any](b *tab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, b.step)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.shot("failed-" + sanitize(what))
		b.t.Fatalf("%s: %v (at %s)", what, err, b.location())
	}
	return v
}

func (b *tab) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	l, _ := chromedp.Run(ctx, chromedp.Location())
	return l
}

// open loads a path of the UI.
func (b *tab) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path))
}

// xp quotes s for an XPath string literal.
func xp(s string) string {
	if !strings.Contains(s, `"`) {
		return `"` + s + `"`
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return "concat('" + strings.ReplaceAll(s, "'", `', "'", '`) + "', '')"
}

// Selectors (XPath, through DOM.performSearch).
func button(label string) string {
	return `//button[normalize-space()=` + xp(label) + ` or @aria-label=` + xp(label) + `]`
}
func link(label string) string { return `//a[normalize-space()=` + xp(label) + `]` }

// text is the innermost element whose text contains s.
func text(s string) string {
	c := `contains(normalize-space(.), ` + xp(s) + `)`
	return `//body//*[not(self::script) and not(self::style)][` + c + ` and not(*[` + c + `])]`
}
func heading(s string) string { return `//h1[contains(normalize-space(.), ` + xp(s) + `)]` }

func (b *tab) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.WaitVisible(sel), chromedp.Click(sel, chromedp.NodeVisible))
}

func (b *tab) see(sel string) {
	b.t.Helper()
	b.do("see "+sel, chromedp.WaitVisible(sel))
}

func (b *tab) gone(sel string) {
	b.t.Helper()
	b.do("gone "+sel, chromedp.WaitNotPresent(sel))
}

func (b *tab) typeInto(css, s string) {
	b.t.Helper()
	b.do("type into "+css, chromedp.WaitVisible(chromedp.CSS(css)), sendKeys(css, s))
}

// sendKeys focuses the element and types keys into it: chromedp.SendKeys
// without its look at the node's type attribute, which it reads while
// chromedp's event loop may be rewriting the attributes (a data race the
// race detector reported) and which only matters for file inputs.
func sendKeys(css, keys string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Focus(chromedp.CSS(css), chromedp.NodeVisible), chromedp.KeyEvent(keys))
}

// choose selects an option of a <select> as a user would, firing change.
func (b *tab) choose(css, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = %q; if (s.value !== %q) return false; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`, css, value, value)
	b.do("wait for "+css, chromedp.WaitVisible(chromedp.CSS(css)))
	if !run(b, "choose "+value+" in "+css, chromedp.Evaluate[bool](js)) {
		b.t.Fatalf("choose %s in %s: no such option", value, css)
	}
	// The select is controlled by the URL: wait until it shows the choice.
	b.waitFor(css+" shows "+value, fmt.Sprintf(`document.querySelector(%q).value === %q`, css, value))
}

func (b *tab) eval(js string) string {
	b.t.Helper()
	return run(b, "eval "+js, chromedp.Evaluate[string](js))
}

// waitFor polls a JavaScript condition. An evaluation that fails counts
// as not yet: a condition polled across a navigation is evaluated in a
// page that is going away ("Inspected target navigated or closed"). A
// failure that lasts until the deadline is reported with it.
func (b *tab) waitFor(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(b.step)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, b.step)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.shot("failed-" + sanitize(what))
			b.t.Fatalf("timed out waiting for %s (%s) at %s (last evaluation error: %v)", what, cond, b.location(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *tab) count(css string) int {
	b.t.Helper()
	n := run(b, "count "+css, chromedp.Evaluate[int](`document.querySelectorAll(`+strconv.Quote(css)+`).length`))
	return n
}

// shot saves a full-page PNG screenshot as a test artifact.
func (b *tab) shot(name string) {
	if _, err := b.capture(name); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// docShot saves a screenshot of one of the main screens: the full page as
// a test artifact, and when E2E_DOCS_SCREENSHOTS is set, what the window
// shows (the first screenful, a bounded file) as the committed copy
// docName.png there; refreshing the docs must not silently skip one.
func (b *tab) docShot(name, docName string) {
	b.t.Helper()
	b.shot(name)
	if b.docs == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err == nil {
		err = os.WriteFile(filepath.Join(b.docs, docName+".png"), buf, 0o644)
	}
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", docName, err)
	}
}

func (b *tab) capture(name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, err
	}
	return buf, os.WriteFile(filepath.Join(b.shots, name+".png"), buf, 0o644)
}

func sanitize(s string) string {
	var out strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
			out.WriteRune(r)
		default:
			out.WriteRune('_')
		}
		if out.Len() > 60 {
			break
		}
	}
	return out.String()
}
