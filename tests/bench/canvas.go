package main

import (
	"os"

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
