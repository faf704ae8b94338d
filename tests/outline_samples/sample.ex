defmodule Shapes.Circle do
  @moduledoc """
  A circle.

  With an area.
  """
  use Shapes.Shape
  alias Shapes.Secret

  defstruct radius: 1.0,
            name: "circle"

  @type t :: %__MODULE__{radius: float}

  # The unit circle.
  @doc "Makes a circle."
  @spec new(float) :: t
  def new(radius) when radius >= 0 do
    %__MODULE__{radius: radius}
  end

  @doc """
  Its area.
  """
  def area(%__MODULE__{radius: r}) do
    secret_square = r * r
    :math.pi() * secret_square
  end

  @doc false
  def scale(circle, factor), do: %{circle | radius: circle.radius * factor}

  defp secret_helper(x) do
    Secret.hide(x)
  end

  defmodule Error do
    defexception message: "bad circle"
  end
end
