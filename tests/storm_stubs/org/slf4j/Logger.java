package org.slf4j;

/** Stand-in for slf4j's Logger: the three methods the scheduler logs with. */
public interface Logger {
    void info(String format, Object... arguments);

    void warn(String format, Object... arguments);

    void error(String format, Object... arguments);
}
