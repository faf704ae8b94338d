#!/bin/sh
# Sample shell script for outlines.

SHAPES_VERSION=1.0

# Prints a circle's area.
circle_area() {
  secret_square=$(( $1 * $1 ))
  echo $(( 3 * secret_square ))
}

function unit_circle {
  circle_area 1
}

{ # the rest runs once it is all read
  shapes_main() {
    case "$1" in
      area) circle_area "$2" ;;
      *) echo "secret_usage" ;;
    esac
  }
}

shapes_main "$@"
