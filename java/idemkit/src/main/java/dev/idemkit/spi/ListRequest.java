package dev.idemkit.spi;

/**
 * Which records {@link StoreOperations#list} returns, a page at a time.
 *
 * @param allTenants every tenant's records (then {@link #tenant()} is ignored)
 * @param tenant when not {@code allTenants}: this tenant's records ({@code null}: those without)
 * @param status {@code in-progress}, {@code abandoned}, {@code completed}, or {@code null} for any
 * @param limit at most this many records per page (a store may return fewer)
 * @param cursor the previous page's {@link ListResult#nextCursor()}, or {@code null} to start
 */
public record ListRequest(
        boolean allTenants, String tenant, String status, int limit, String cursor) {}
