package status

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"regexp"
	"strconv"
)

// PageCheck is what CheckPage found.
type PageCheck struct {
	Rows         int // round-table rows in the DOM
	CurvePoints  int // points of the curve's SVG path
	PlotW, PlotH int // the plot area found in the screenshot
	CurvePixels  int // pixels of the curve colour inside it
}

var (
	rowRE   = regexp.MustCompile(`<tr class="round (kept|dropped|pending)"`)
	curveRE = regexp.MustCompile(`<path class="curve"[^>]*\sd="([^"]*)"`)
	pointRE = regexp.MustCompile(`[ML]\s*-?[0-9.]+\s+-?[0-9.]+`)
)

// Plot-area background and curve colours (page.html).
var (
	plotBackground = [3]uint8{0xf7, 0xf7, 0xee}
	curveRGB       = [3]uint8{0x1f, 0x77, 0xb4}
)

// MinCurvePixels is the fewest curve-coloured pixels CheckPage accepts in
// the plot area: a 3-px line between two points at least 40 px apart is
// about 120 px, and each point's marker (r = 4.5, 2-px stroke) about 60.
// The legend's swatch is outside the plot area; with no curve the plot area
// holds no pixel of that colour.
const MinCurvePixels = 100

// CheckPage checks a status page rendered by a headless browser: dom is its
// serialised DOM (chromium --dump-dom), shot a PNG screenshot. It wants at
// least minRows rows in the round table, a curve path with at least one
// point, and at least MinCurvePixels pixels of the curve colour inside the
// plot area (found by its background colour) of the screenshot.
func CheckPage(dom, shot []byte, minRows int) (PageCheck, error) {
	var c PageCheck
	c.Rows = len(rowRE.FindAll(dom, -1))
	if m := curveRE.FindSubmatch(dom); m != nil {
		c.CurvePoints = len(pointRE.FindAll(m[1], -1))
	}
	decoded, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return c, fmt.Errorf("screenshot: %w", err)
	}
	img := toRGBA(decoded)
	box, ok := findColourBox(img, plotBackground, 2)
	if ok {
		c.PlotW, c.PlotH = box.Dx(), box.Dy()
		c.CurvePixels = countColour(img, box, curveRGB, 40)
	}
	switch {
	case c.Rows < minRows:
		return c, fmt.Errorf("the DOM has %d round rows, want at least %d", c.Rows, minRows)
	case c.CurvePoints < 1:
		return c, fmt.Errorf("the DOM has no curve path with points")
	case !ok || c.PlotW < 100 || c.PlotH < 50:
		return c, fmt.Errorf("no plot area (background #%02x%02x%02x) in the screenshot", plotBackground[0], plotBackground[1], plotBackground[2])
	case c.CurvePixels < MinCurvePixels:
		return c, fmt.Errorf("%d pixels of the curve colour in the %dx%d plot area, want at least %d", c.CurvePixels, c.PlotW, c.PlotH, MinCurvePixels)
	}
	return c, nil
}

func near(p []uint8, want [3]uint8, tol int) bool {
	for i := 0; i < 3; i++ {
		d := int(p[i]) - int(want[i])
		if d < -tol || d > tol {
			return false
		}
	}
	return true
}

// toRGBA copies img into an RGBA image (a no-op for one already).
func toRGBA(img image.Image) *image.RGBA {
	if r, ok := img.(*image.RGBA); ok {
		return r
	}
	r := image.NewRGBA(img.Bounds())
	draw.Draw(r, r.Bounds(), img, img.Bounds().Min, draw.Src)
	return r
}

// findColourBox is the bounding box of the pixels of colour want.
func findColourBox(img *image.RGBA, want [3]uint8, tol int) (image.Rectangle, bool) {
	b := img.Bounds()
	box, found := image.Rectangle{}, false
	for y := b.Min.Y; y < b.Max.Y; y++ {
		row := img.Pix[(y-b.Min.Y)*img.Stride:]
		for x := 0; x < b.Dx(); x++ {
			if !near(row[4*x:], want, tol) {
				continue
			}
			p := image.Rect(b.Min.X+x, y, b.Min.X+x+1, y+1)
			if !found {
				box, found = p, true
			} else {
				box = box.Union(p)
			}
		}
	}
	return box, found
}

func countColour(img *image.RGBA, box image.Rectangle, want [3]uint8, tol int) int {
	n := 0
	for y := box.Min.Y; y < box.Max.Y; y++ {
		for x := box.Min.X; x < box.Max.X; x++ {
			if near(img.Pix[img.PixOffset(x, y):], want, tol) {
				n++
			}
		}
	}
	return n
}

// String summarises a check.
func (c PageCheck) String() string {
	return "rows " + strconv.Itoa(c.Rows) + ", curve points " + strconv.Itoa(c.CurvePoints) + ", plot " +
		strconv.Itoa(c.PlotW) + "x" + strconv.Itoa(c.PlotH) + ", curve pixels " + strconv.Itoa(c.CurvePixels)
}
