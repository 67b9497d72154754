package reports

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumPath finds a headless-capable Chromium. The HTML report is only known to work
// once a real browser has run its script, so a missing browser fails the test: CI
// installs one.
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found on PATH: this test opens index.html in a headless browser and does not skip. " +
		"Install it (Debian/Ubuntu: apt-get install chromium); CI installs it")
	return ""
}

// runChromium runs a headless Chromium on the page with extra flags and returns its
// stdout and stderr.
func runChromium(t testing.TB, page string, flags ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}, flags...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, chromiumPath(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

func TestHTMLInBrowser(t *testing.T) {
	for _, c := range storedRuns {
		t.Run(c.name, func(t *testing.T) {
			run, _ := writeStored(t, c.name)
			page, err := filepath.Abs(filepath.Join(run.Dir, HTMLFile))
			if err != nil {
				t.Fatal(err)
			}
			dom, stderr := runChromium(t, page, "--dump-dom")
			if !strings.Contains(dom, `data-ready="1"`) {
				t.Errorf("the page's script did not finish (no data-ready on <body>)")
			}
			if m := regexp.MustCompile(`data-error="([^"]*)"`).FindStringSubmatch(dom); m != nil {
				t.Errorf("script error: %s", m[1])
			}
			for _, l := range strings.Split(stderr, "\n") {
				if strings.Contains(l, "CONSOLE") && strings.Contains(l, HTMLFile) {
					t.Errorf("console message: %s", l)
				}
			}
			if !strings.Contains(dom, `<svg id="timeline"`) {
				t.Fatal("no timeline SVG in the DOM")
			}
			lanes := regexp.MustCompile(`<g class="lane" data-node="([^"]+)"`).FindAllStringSubmatch(dom, -1)
			if len(lanes) != len(run.Info.Nodes) {
				t.Errorf("%d lanes, want one per node (%d)", len(lanes), len(run.Info.Nodes))
			}
			for i, m := range lanes {
				if i < len(run.Info.Nodes) && m[1] != run.Info.Nodes[i] {
					t.Errorf("lane %d is %s, want %s", i, m[1], run.Info.Nodes[i])
				}
			}
			if want := `data-lanes="` + itoa(len(run.Info.Nodes)) + `"`; !strings.Contains(dom, want) {
				t.Errorf("the script counted other lanes than %s", want)
			}

			shot := filepath.Join(t.TempDir(), c.name+".png")
			runChromium(t, page, "--screenshot="+shot, "--window-size=1400,1800")
			checkNotBlank(t, shot)
			if os.Getenv("FENCELINE_KEEP_SCREENSHOTS") != "" {
				t.Logf("screenshot: %s", shot)
			}
		})
	}
}

// checkNotBlank fails unless the screenshot shows a page: many colours, and much of it
// different from the background.
func checkNotBlank(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 1000 || b.Dy() < 1000 {
		t.Fatalf("screenshot is %v", b)
	}
	bg := img.At(b.Min.X, b.Min.Y)
	colours := map[[3]uint32]bool{}
	differ, total := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			c := img.At(x, y)
			r, g, bl, _ := c.RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if !sameColour(c, bg) {
				differ++
			}
			total++
		}
	}
	if len(colours) < 50 || differ*10 < total {
		t.Errorf("the screenshot looks blank: %d colours, %d of %d sampled pixels differ from the background", len(colours), differ, total)
	}
}

func sameColour(a, b color.Color) bool {
	ar, ag, ab, _ := a.RGBA()
	br, bg, bb, _ := b.RGBA()
	return ar == br && ag == bg && ab == bb
}

// The page fetches nothing: every link and source is relative to the run directory.
func TestHTMLIsSelfContained(t *testing.T) {
	for _, c := range storedRuns {
		run, _ := writeStored(t, c.name)
		page := string(readFile(t, filepath.Join(run.Dir, HTMLFile)))
		for _, m := range regexp.MustCompile(`(?i)\b(?:src|href|action|data)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
			if strings.Contains(m[1], ":") || strings.HasPrefix(m[1], "//") {
				t.Errorf("%s: %s points outside the run directory", c.name, m[0])
			}
		}
		for _, bad := range []string{"<link", "@import", "url(http", "fetch(", "XMLHttpRequest", "<script src"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s: the page contains %q", c.name, bad)
			}
		}
		for _, l := range run.Info.Nodes {
			if !strings.Contains(page, `href="history/`+l+`.jsonl"`) || !strings.Contains(page, `href="logs/`+l+`.log"`) {
				t.Errorf("%s: no link to %s's history and log", c.name, l)
			}
		}
		for _, f := range []string{"faults.jsonl", "store.json", "results.json", "report.md", "junit.xml", "history/", "logs/"} {
			if !strings.Contains(page, `href="`+f+`"`) {
				t.Errorf("%s: no link to %s", c.name, f)
			}
		}
	}
}
