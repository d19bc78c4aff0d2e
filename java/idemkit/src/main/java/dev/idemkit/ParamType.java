package dev.idemkit;

/** Where the parameters of a {@link WebService} action go. */
public enum ParamType {
    /**
     * A JSON object of the parameters ({@code Content-Type: application/json}); parameters named by
     * a {@code {name}} placeholder of the endpoint fill the path instead.
     */
    BODY,
    /**
     * The query string, each name and value percent-encoded (UTF-8, everything but {@code A-Z a-z
     * 0-9 - . _ ~}, so a space is {@code %20}); a list repeats the name per item; parameters named
     * by a {@code {name}} placeholder fill the path instead.
     */
    QUERY,
    /**
     * Every parameter fills the {@code {name}} placeholder of the endpoint, percent-encoded as one
     * path segment ({@code /} included); every parameter needs a placeholder.
     */
    PATH
}
