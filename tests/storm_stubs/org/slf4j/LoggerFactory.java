package org.slf4j;

/** Stand-in for slf4j's LoggerFactory: a logger that writes "LEVEL message" to stderr. */
public final class LoggerFactory {
    private LoggerFactory() {
    }

    public static Logger getLogger(Class<?> clazz) {
        return new Logger() {
            private void log(String level, String format, Object... args) {
                StringBuilder out = new StringBuilder(level).append(' ');
                int k = 0;
                for (int i = 0; i < format.length(); i++) {
                    if (format.startsWith("{}", i) && k < args.length) {
                        out.append(args[k++]);
                        i++;
                    } else {
                        out.append(format.charAt(i));
                    }
                }
                System.err.println(out);
            }

            public void info(String format, Object... arguments) {
                log("INFO", format, arguments);
            }

            public void warn(String format, Object... arguments) {
                log("WARN", format, arguments);
            }

            public void error(String format, Object... arguments) {
                log("ERROR", format, arguments);
            }
        };
    }
}
