package shapes

import scala.math.Pi

/** Something with an area. */
trait Shape {
  def area: Double
  val name: String
}

/** A circle. */
case class Circle(radius: Double) extends Shape {
  val name = "circle"

  def area: Double = {
    val secretSquare = radius * radius
    Pi * secretSquare
  }

  @deprecated("use area", "1.0")
  def surface(scale: Double,
              offset: Double): Double = area * scale + offset
}

object Circle {
  type Radius = Double

  def unit: Circle = Circle(1.0)

  def parse(text: String): Option[Circle] =
    text.toDoubleOption
      .map(secretValue => Circle(secretValue))
}

enum Color {
  case Red, Green
}
