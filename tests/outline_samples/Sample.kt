// Sample Kotlin file for outlines.
package com.example.shapes

import kotlin.math.PI

/** A shape with an area. */
interface Shape {
    fun area(): Double
}

typealias Shapes = List<Shape>

const val MAX = 10

@JvmInline
value class Meters(val value: Double)

/** A circle. */
data class Circle(val radius: Double) : Shape {
    val diameter: Double
        get() = radius * 2

    init {
        require(radius >= 0)
    }

    override fun area(): Double {
        val r = radius
        return PI * r * r
    }

    fun scaled(by: Double) = Circle(radius * by)

    companion object {
        fun unit(): Circle {
            return Circle(1.0)
        }
    }
}

enum class Color {
    RED,
    GREEN,
}

object Registry {
    private val shapes = mutableListOf<Shape>()

    fun register(shape: Shape) {
        shapes.add(shape)
    }
}

fun <T> top(items: List<T>,
            limit: Int): List<T> {
    return items.take(limit)
}
