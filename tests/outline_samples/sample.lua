-- Sample Lua module for outlines.
local M = {}

local secret_scale = 2

--- A circle's area.
local function area(radius)
  local secret_square = radius * radius
  return math.pi * secret_square
end

--- Makes a circle.
function M.new(radius)
  return setmetatable({ radius = radius }, { __index = M })
end

function M:area()
  return area(self.radius)
end

function M:scaled(factor) return M.new(self.radius * factor) end

--- A module's function as a value.
M.perimeter = function(circle)
  local secret_double = 2 * circle.radius
  return math.pi * secret_double
end

return M
