/* Sample C file for outlines. */
#include <stdio.h>
#include "local.h"

#define MAX_SIZE 1024
#define SQUARE(x) ((x) * (x))
#define SWAP(a, b) do { \
    int t = (a);        \
    (a) = (b);          \
    (b) = t;            \
  } while (0)

/* A point in the plane. */
struct point {
  int x;
  int y;
  struct {
    int r, g, b;
  } color;
};

typedef struct node {
  struct node *next;
  void *value;
} node_t;

typedef enum { RED, GREEN, BLUE } color_t;
typedef int (*compare_fn)(const void *, const void *);

static const int table[] = {
  1, 2, 3,
};

int add(int a, int b);

/*
 * Sum of two ints.
 * Longer explanation.
 */
int
add(int a, int b)
{
  int sum = a + b;
  return sum;
}

static inline int twice(int x) { return 2 * x; }

#ifdef HAVE_THREADS
void *worker(void *arg,
             int flags) {
  for (;;) {
    run(arg);
  }
  return NULL;
}
#else
void worker_stub(void) {
  secret_stub_detail();
}
#endif
