package com.example;

import java.util.List;

/**
 * A sample class.
 */
@Deprecated
public class Sample<T> extends Base implements Runnable {
    private int count = 0;

    public Sample(int count) {
        this.count = count;
    }

    /** Runs it. */
    @Override
    public void run() {
        count++;
    }

    public static <U> List<U> many(
            U item,
            int n) throws IllegalArgumentException {
        return null;
    }

    interface Listener {
        void onEvent(String name);
    }

    enum Mode {
        A, B;
        int code() { return 1; }
    }

    record Pair(int a, int b) {
        Pair {
            if (a < 0) throw new IllegalArgumentException();
        }
    }
}
