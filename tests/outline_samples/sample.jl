# Sample Julia module for outlines.
module Shapes

export Circle, area

const UNIT = 1.0

"""
    Circle(radius)

A circle.
"""
struct Circle
    radius::Float64
end

abstract type Shape end

"""
    area(c::Circle)

Its area.
"""
function area(c::Circle)::Float64
    secret_square = c.radius^2
    return pi * secret_square
end

@inline function scaled(c::Circle,
                        factor::Real)
    return Circle(c.radius * factor)
end

macro unit()
    return :(Circle(UNIT))
end

perimeter(c::Circle) = 2pi * c.radius

end # module
