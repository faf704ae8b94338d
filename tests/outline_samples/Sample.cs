// Sample C# file for outlines.
using System;
using System.Collections.Generic;

namespace Shapes
{
    /// <summary>A shape.</summary>
    public interface IShape
    {
        double Area();
    }

    public delegate void Changed(object sender);

    /// <summary>A circle.</summary>
    [Serializable]
    public class Circle : IShape
    {
        private readonly double radius;

        public double Radius { get; set; }

        public event Changed OnChanged;

        public Circle(double radius)
        {
            this.radius = radius;
        }

        public double Area()
        {
            var r = radius;
            return Math.PI * r * r;
        }

        public double Diameter => radius * 2;

        public static Circle operator +(Circle a, Circle b)
        {
            return new Circle(a.radius + b.radius);
        }
    }

    public struct Point
    {
        public int X;
        public int Y;
    }

    public enum Color { Red, Green }

    public record Person(string Name, int Age);
}
