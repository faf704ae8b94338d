# Sample Ruby file for outlines.
require "json"

module Shapes
  VERSION = "1.0"

  # A circle.
  class Circle < Base
    include Comparable
    attr_reader :radius

    def initialize(radius)
      @radius = radius
    end

    # Its area.
    def area
      Math::PI * radius * radius
    end

    def self.unit
      new(1)
    end

    class << self
      def registry
        @registry ||= {}
      end
    end

    private

    def secret_helper(a,
                      b)
      a + b
    end

    def short = radius * 2
  end
end

helpers do
  def current_user
    session[:user]
  end
end
