defmodule Shapes.CircleTest do
  use ExUnit.Case, async: true

  setup do
    {:ok, circle: Shapes.Circle.new(1.0)}
  end

  describe "area/1" do
    test "of the unit circle", %{circle: circle} do
      assert_in_delta Shapes.Circle.area(circle), 3.14159, 0.001
    end

    test "of a larger circle" do
      secret = Shapes.Circle.new(2.0)
      assert Shapes.Circle.area(secret) > 12
    end
  end
end
