// Sample C++ file for outlines.
#include <vector>

namespace geometry {

/// A box holding one value.
template <typename T>
class Box : public Base {
 public:
  explicit Box(T v) : v_(v) {}
  T get() const {
    return v_ * secret_factor;
  }
  virtual void reset() = 0;
  static int count;

 private:
  T v_;
};

struct Pair {
  int first;
  int second;
};

enum class Shape { Circle, Square };

int Area::compute(int w,
                  int h) const {
  int area = w * h;
  return area;
}

}  // namespace geometry

extern "C" {
int c_entry(void);
}
