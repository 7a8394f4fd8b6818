package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ChromiumPath is Debian's headless-capable browser, used for screenshots and the rendering test.
const ChromiumPath = "/usr/bin/chromium"

// FindChromium returns the Chromium binary: ChromiumPath, else chromium or chromium-browser on PATH.
func FindChromium() (string, error) {
	if st, err := os.Stat(ChromiumPath); err == nil && !st.IsDir() {
		return ChromiumPath, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium: install Debian's chromium package (apt-get install -y chromium)")
}

// runChromium runs headless Chromium on a local HTML file with a throw-away profile and no network
// services; extra are the action flags (--dump-dom, --screenshot=...). It returns stdout and stderr.
func runChromium(htmlPath string, extra ...string) (stdout, stderr []byte, err error) {
	bin, err := FindChromium()
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return nil, nil, err
	}
	profile, err := os.MkdirTemp("", "smallinit-chromium-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(profile)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--no-default-browser-check", "--hide-scrollbars", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}
	args = append(append(args, extra...), "file://"+filepath.ToSlash(abs))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HOME="+profile)
	if err := cmd.Run(); err != nil {
		return out.Bytes(), errb.Bytes(), fmt.Errorf("chromium: %w", err)
	}
	return out.Bytes(), errb.Bytes(), nil
}

// DumpDOM loads an HTML file in headless Chromium and returns the DOM it built and Chromium's log.
func DumpDOM(htmlPath string) (dom, log string, err error) {
	o, e, err := runChromium(htmlPath, "--dump-dom")
	return string(o), string(e), err
}

// Screenshot renders an HTML file in headless Chromium into a PNG width CSS pixels wide showing the whole
// page: it shoots a window taller than height (an estimate of the page's height, such as Page.HeightPx) and
// trims the empty rows below the page.
func Screenshot(htmlPath, pngPath string, width, height int) error {
	abs, err := filepath.Abs(pngPath)
	if err != nil {
		return err
	}
	tall := min(max(height*3/2, 1200), maxShotHeight)
	_, e, err := runChromium(htmlPath, fmt.Sprintf("--window-size=%d,%d", width, tall), "--screenshot="+abs)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, e)
	}
	if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
		return fmt.Errorf("chromium wrote no screenshot to %s\n%s", abs, e)
	}
	return trimBottom(abs, 16)
}

// maxShotHeight is the tallest window shot; a longer page is cut there.
const maxShotHeight = 16000

// trimBottom crops the rows at the bottom of a PNG that are one flat colour, keeping margin of them.
func trimBottom(path string, margin int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	b := img.Bounds()
	bg := img.At(b.Min.X, b.Max.Y-1)
	same := func(c color.Color) bool {
		r1, g1, b1, a1 := c.RGBA()
		r2, g2, b2, a2 := bg.RGBA()
		return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
	}
	y := b.Max.Y
	for ; y > b.Min.Y; y-- {
		flat := true
		for x := b.Min.X; x < b.Max.X && flat; x++ {
			flat = same(img.At(x, y-1))
		}
		if !flat {
			break
		}
	}
	y = min(b.Max.Y, y+margin)
	if y >= b.Max.Y {
		return nil
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return nil
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Max.X, y))); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
