{-# LANGUAGE LambdaCase #-}
-- | Sample Haskell module for outlines.
module Shapes
  ( Shape (..)
  , area
  ) where

import Data.List (foldl')

-- | A shape.
data Shape
  = Circle Double
  | Square Double
  deriving (Show, Eq)

newtype Name = Name String

type Radius = Double

-- | Things with an area.
class HasArea a where
  -- | Its area.
  areaOf :: a -> Double
  areaOf _ = 0

instance HasArea Shape where
  areaOf = area

-- | Its area.
area :: Shape -> Double
area (Circle r) = pi * r * r
area (Square s) =
  let secretSquare = s * s
   in secretSquare

total :: [Shape] -> Double
total = foldl' (\acc s -> acc + area s) 0

unit = Circle 1
