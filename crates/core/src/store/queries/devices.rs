//! Phones paired to the LAN listener: one row per device, known by the
//! SHA-256 of its credential (`docs/ARCHITECTURE.md`, "Phone").

use rusqlite::{params, OptionalExtension, Row};

use super::Db;
use crate::model::Device;
use crate::Result;

const DEVICE_COLUMNS: &str = "id, name, created_at, last_seen_at, last_address";

fn device_from_row(row: &Row<'_>) -> rusqlite::Result<Device> {
    Ok(Device {
        id: row.get("id")?,
        name: row.get("name")?,
        created_at: row.get("created_at")?,
        last_seen_at: row.get("last_seen_at")?,
        last_address: row.get("last_address")?,
    })
}

impl<'c> Db<'c> {
    /// Every paired device, the most recently paired first.
    pub fn devices(&self) -> Result<Vec<Device>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {DEVICE_COLUMNS} FROM phone_devices ORDER BY created_at DESC, id"
        ))?;
        let rows = stmt
            .query_map([], device_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    /// Each device's id with the SHA-256 (hex) of its credential.
    pub fn device_credentials(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, credential_sha256 FROM phone_devices")?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    pub fn insert_device(&self, device: &Device, credential_sha256: &str) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO phone_devices (id, name, credential_sha256, created_at, last_seen_at, last_address)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                device.id,
                device.name,
                credential_sha256,
                device.created_at,
                device.last_seen_at,
                device.last_address
            ])?;
        Ok(())
    }

    /// Rename a device; `None` when there is no such device.
    pub fn rename_device(&self, id: &str, name: &str) -> Result<Option<Device>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "UPDATE phone_devices SET name = ?2 WHERE id = ?1 RETURNING {DEVICE_COLUMNS}"
            ))?
            .query_row(params![id, name], device_from_row)
            .optional()?)
    }

    /// Forget a device (its credential stops working); `None` when there was none.
    pub fn revoke_device(&self, id: &str) -> Result<Option<Device>> {
        Ok(self
            .conn
            .prepare_cached(&format!(
                "DELETE FROM phone_devices WHERE id = ?1 RETURNING {DEVICE_COLUMNS}"
            ))?
            .query_row([id], device_from_row)
            .optional()?)
    }

    /// When and from where a device was last seen.
    pub fn touch_device(&self, id: &str, at: &str, address: &str) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE phone_devices SET last_seen_at = ?2, last_address = ?3 WHERE id = ?1")?
            .execute(params![id, at, address])?;
        Ok(())
    }

    /// Forget every device (a restored database brings none along).
    pub fn forget_all_devices(&self) -> Result<usize> {
        Ok(self.conn.execute("DELETE FROM phone_devices", [])?)
    }
}
