/*
 * A small, strict JSON reader for the assignment file (RFC 8259: objects, arrays, strings,
 * numbers, true, false, null).  Objects become LinkedHashMap, arrays ArrayList, numbers
 * Double or Long.  No dependency beyond the JDK, so the scheduler needs nothing on nimbus's
 * class path but Storm's own jars.
 */
package cloudsched.storm;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class Json {
    private static final int MAX_DEPTH = 64;
    private final String text;
    private int pos;

    private Json(String text) {
        this.text = text;
    }

    /** Parse a whole document; IllegalArgumentException (with the offset) if it is not JSON. */
    public static Object parse(String text) {
        Json p = new Json(text);
        p.space();
        Object value = p.value(0);
        p.space();
        if (p.pos != text.length()) {
            throw p.error("text after the document");
        }
        return value;
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("not JSON at offset " + pos + ": " + what);
    }

    private void space() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested deeper than " + MAX_DEPTH);
        }
        if (pos >= text.length()) {
            throw error("unexpected end");
        }
        char c = text.charAt(pos);
        if (c == '{') {
            return object(depth);
        }
        if (c == '[') {
            return array(depth);
        }
        if (c == '"') {
            return string();
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
        }
        if (text.startsWith("true", pos)) {
            pos += 4;
            return Boolean.TRUE;
        }
        if (text.startsWith("false", pos)) {
            pos += 5;
            return Boolean.FALSE;
        }
        if (text.startsWith("null", pos)) {
            pos += 4;
            return null;
        }
        throw error("unexpected character");
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> out = new LinkedHashMap<>();
        pos++;
        space();
        if (pos < text.length() && text.charAt(pos) == '}') {
            pos++;
            return out;
        }
        while (true) {
            space();
            if (pos >= text.length() || text.charAt(pos) != '"') {
                throw error("expected a string key");
            }
            String key = string();
            space();
            expect(':');
            space();
            if (out.containsKey(key)) {
                throw error("key \"" + key + "\" given twice");
            }
            out.put(key, value(depth + 1));
            space();
            if (pos < text.length() && text.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect('}');
            return out;
        }
    }

    private List<Object> array(int depth) {
        List<Object> out = new ArrayList<>();
        pos++;
        space();
        if (pos < text.length() && text.charAt(pos) == ']') {
            pos++;
            return out;
        }
        while (true) {
            space();
            out.add(value(depth + 1));
            space();
            if (pos < text.length() && text.charAt(pos) == ',') {
                pos++;
                continue;
            }
            expect(']');
            return out;
        }
    }

    private void expect(char c) {
        if (pos >= text.length() || text.charAt(pos) != c) {
            throw error("expected '" + c + "'");
        }
        pos++;
    }

    private String string() {
        StringBuilder out = new StringBuilder();
        pos++;
        while (true) {
            if (pos >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (pos >= text.length()) {
                throw error("unterminated escape");
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u':
                    if (pos + 4 > text.length()) {
                        throw error("short \\u escape");
                    }
                    try {
                        out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw error("bad \\u escape");
                    }
                    pos += 4;
                    break;
                default:
                    throw error("bad escape");
            }
        }
    }

    private Object number() {
        int start = pos;
        if (text.charAt(pos) == '-') {
            pos++;
        }
        boolean integral = true;
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c >= '0' && c <= '9') {
                pos++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                pos++;
            } else {
                break;
            }
        }
        String s = text.substring(start, pos);
        try {
            if (integral) {
                return Long.parseLong(s);
            }
            double d = Double.parseDouble(s);
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw error("number out of range");
            }
            return d;
        } catch (NumberFormatException ex) {
            throw error("bad number " + s);
        }
    }
}
