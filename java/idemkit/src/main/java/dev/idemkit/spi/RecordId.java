package dev.idemkit.spi;

/**
 * Where a record lives: its tenant and key. Records are tenant-scoped: one key under two tenants is
 * two records.
 *
 * @param tenant the tenant in NFC, or {@code null} for records without a tenant
 * @param key the key: 64 lowercase hex digits
 */
public record RecordId(String tenant, String key) {}
