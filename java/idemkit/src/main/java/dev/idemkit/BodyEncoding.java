package dev.idemkit;

/**
 * How the {@link ParamType#BODY} parameters of a {@link WebService} action are written into the
 * request body.
 */
public enum BodyEncoding {
    /** A JSON object of the parameters, sent as {@code Content-Type: application/json}. */
    JSON,
    /**
     * {@code application/x-www-form-urlencoded}, as Stripe's API and HTML forms take it: {@code
     * name=value} pairs joined by {@code &}, names and values percent-encoded as UTF-8. A nested
     * object becomes {@code name[member]=value}, a list {@code name[0]=value}, {@code name[1]=...}
     * (Stripe's convention); a null is left out; a number is sent as it was passed.
     */
    FORM;

    /** The media type this encoding is sent as. */
    String mediaType() {
        return this == JSON ? "application/json" : "application/x-www-form-urlencoded";
    }
}
