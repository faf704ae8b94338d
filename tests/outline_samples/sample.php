<?php declare(strict_types=1);

namespace Shapes;

use InvalidArgumentException;

/**
 * Something with an area.
 */
interface Shape
{
    public function area(): float;
}

#[Immutable]
final class Circle implements Shape
{
    public const UNIT = 1.0;

    private float $radius;

    /**
     * Makes a circle.
     */
    public function __construct(float $radius)
    {
        if ($radius < 0) {
            throw new InvalidArgumentException('secret_radius');
        }
        $this->radius = $radius;
    }

    public function area(): float
    {
        return M_PI * $this->radius ** 2;
    }
}

trait Named
{
    public function name(): string { return static::class; }
}

enum Color: string
{
    case Red = 'red';
    case Green = 'green';
}

function unit_circle(): Circle
{
    return new Circle(Circle::UNIT);
}
