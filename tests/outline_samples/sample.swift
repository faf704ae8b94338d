import Foundation

/// Something with an area.
protocol Shape {
    associatedtype Unit
    var name: String { get }
    func area() -> Double
}

/// A circle.
public final class Circle: Shape {
    public typealias Unit = Double

    let radius: Double

    public var name: String {
        let secretPrefix = "circle"
        return secretPrefix
    }

    public init(radius: Double) {
        self.radius = radius
    }

    @discardableResult
    public func area() -> Double {
        Double.pi * radius * radius
    }

    deinit {
        print("secret_bye")
    }
}

enum Color {
    case red
    case green(Double)
}

extension Circle: CustomStringConvertible {
    public var description: String { "circle" }

    func scaled(by factor: Double,
                rounding: Bool = false) -> Circle {
        Circle(radius: radius * factor)
    }
}

func unitCircle() -> Circle {
    return Circle(radius: 1)
}
