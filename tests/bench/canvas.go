package main

import (
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// splitHorizontal splits c into a left part of the given width and the rest.
func splitHorizontal(c draw.Canvas, width vg.Length) (draw.Canvas, draw.Canvas) {
	left, right := c, c
	left.Max.X = c.Min.X + width
	right.Min.X = c.Min.X + width
	return left, right
}

func savePNG(c *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// series is one line of a chart: its legend name (none when empty), points and colour (the
// plotter's default when nil).
type series struct {
	name string
	xys  plotter.XYs
	c    color.Color
}

// addLines draws each series as a line with points into p, with a legend entry when named.
func addLines(p *plot.Plot, lines ...series) error {
	for _, s := range lines {
		l, pt, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return err
		}
		if s.c != nil {
			l.Color, pt.Color = s.c, s.c
		}
		p.Add(l, pt)
		if s.name != "" {
			p.Legend.Add(s.name, l)
		}
	}
	return nil
}
