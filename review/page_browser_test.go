package review

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/internal/testenv"
)

// chromiumText loads path of the review page in Chromium (playwright-core from e2e/node_modules) with the session
// of b, and returns the rendered text (innerText, as a person reads it) of every element matching each selector. When Chromium,
// node or playwright-core is missing the test skips, or fails under CI (internal/testenv).
func chromiumText(t *testing.T, e *env, b *browser, path string, selectors ...string) [][]string {
	t.Helper()
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	pw, _ := filepath.Abs(filepath.Join("..", "e2e", "node_modules", "playwright-core"))
	if _, err := os.Stat(chromium); err != nil {
		testenv.Missing(t, "no Chromium at %s: apt-get install -y chromium", chromium)
	}
	if _, err := os.Stat(pw); err != nil {
		testenv.Missing(t, "no e2e/node_modules/playwright-core: npm ci --prefix e2e")
	}
	node := testenv.Tool(t, "node", "Node 20 or later (see README)")
	u, _ := url.Parse(e.srv.URL)
	var cookie string
	for _, c := range b.c.Jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/ui/"}) {
		if c.Name == cookieName {
			cookie = c.Value
		}
	}
	script := `
const { chromium } = require(process.argv[2]);
(async () => {
  const [, , , exe, base, cookie, path, ...selectors] = process.argv;
  const browser = await chromium.launch({ executablePath: exe, headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  try {
    const ctx = await browser.newContext();
    await ctx.addCookies([{ name: 'strata_review', value: cookie, url: base + '/ui/' }]);
    const page = await ctx.newPage();
    await page.goto(base + path);
    const texts = [];
    for (const selector of selectors) {
      texts.push(await page.$$eval(selector, (els) => els.map((el) => el.innerText)));
    }
    process.stdout.write(JSON.stringify(texts));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
`
	f := filepath.Join(t.TempDir(), "probe.cjs")
	if err := os.WriteFile(f, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, append([]string{f, pw, chromium, e.srv.URL, cookie, path}, selectors...)...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var texts [][]string
	if err := json.Unmarshal(out, &texts); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return texts
}

// TestWhitespaceChangeVisible: a change that only adds a space inside a string ("a b" → "a  b", an object
// member "x" → "x  y") must not read as the same value twice: values are shown in inline <code>, where the browser
// collapses runs of spaces, so the old and new values of the change read identically in Chromium.
func TestWhitespaceChangeVisible(t *testing.T) {
	e := newEnv(t, true, false)
	ctx := context.Background()
	shop, _ := e.dir.Open(ctx, "shop")
	if _, err := shop.Put(ctx, "notes", []byte(`{"to":"pay  bob","amount":"1 000"}`), writeAdmin()); err != nil {
		t.Fatal(err)
	}
	r, err := shop.Put(ctx, "notes", []byte(`{"to":"pay bob","amount":"1  000"}`), writeAdmin())
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(ritaToken)
	path := fmt.Sprintf("/ui/db/shop/rev/%d", r.Revision)
	texts := chromiumText(t, e, b, path, "tr.op td.old", "tr.op td.new")
	old, nw := texts[0], texts[1]
	if len(old) != 2 || len(nw) != 2 {
		t.Fatalf("want two changed values, got old %q new %q", old, nw)
	}
	for i := range old {
		if strings.TrimSpace(old[i]) == strings.TrimSpace(nw[i]) {
			t.Errorf("change %d reads %q before and %q after in the browser: the spaces that changed are not shown", i, old[i], nw[i])
		}
	}
}
