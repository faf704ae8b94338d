// Package shapes does geometry.
package shapes

import "math"

const Pi = 3.14

// Shape is a thing with an area.
type Shape interface {
	Area() float64
}

type Circle struct {
	R float64
}

// Area returns the area.
func (c *Circle) Area() float64 {
	return math.Pi * c.R * c.R
}

func New(
	r float64,
) *Circle {
	return &Circle{R: r}
}

type (
	A int
	B string
)
