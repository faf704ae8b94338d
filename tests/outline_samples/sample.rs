//! Crate docs.
use std::fmt;

pub const LIMIT: usize = 10;

/// A point in space.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

pub enum Shape {
    Circle(f64),
    Square(f64),
}

pub trait Area {
    /// The area.
    fn area(&self) -> f64;
    type Unit;
}

impl<T: Clone> Area for Wrapper<T>
where
    T: fmt::Debug,
{
    type Unit = f64;
    fn area(&self) -> f64 {
        0.0
    }
}

pub async fn run(x: i32) -> Result<(), Error> {
    Ok(())
}

mod inner {
    pub fn helper() {}
}
