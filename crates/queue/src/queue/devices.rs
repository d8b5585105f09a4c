//! Phones paired to the LAN listener, as the store keeps them: the listener
//! (`serve::phone`) holds the credentials' hashes in memory and asks here
//! only to change them. A device's row is written durably before its
//! credential is handed out, and deleted before a revocation is answered.

use super::Queue;
use crate::model::Device;
use crate::store::Durability;
use crate::Result;

impl Queue {
    /// Every paired device, the most recently paired first.
    pub async fn devices(&self) -> Result<Vec<Device>> {
        self.blocking(|i| i.store.read(|db| db.devices())).await
    }

    /// Each device's id with the SHA-256 of its credential.
    pub async fn device_credentials(&self) -> Result<Vec<(String, String)>> {
        self.blocking(|i| i.store.read(|db| db.device_credentials())).await
    }

    /// Remember a newly paired device and the SHA-256 of its credential.
    pub async fn add_device(&self, device: Device, credential_sha256: String) -> Result<Device> {
        self.blocking(move |i| {
            i.store.write(
                Durability::Full,
                |db| db.insert_device(&device, &credential_sha256),
                |_| (),
            )?;
            Ok(device)
        })
        .await
    }

    /// Rename a device; `None` when there is no such device.
    pub async fn rename_device(&self, id: String, name: String) -> Result<Option<Device>> {
        self.blocking(move |i| {
            i.store
                .write(Durability::Full, |db| db.rename_device(&id, &name), |_| ())
        })
        .await
    }

    /// Forget a device; `None` when there was none.
    pub async fn revoke_device(&self, id: String) -> Result<Option<Device>> {
        self.blocking(move |i| i.store.write(Durability::Full, |db| db.revoke_device(&id), |_| ()))
            .await
    }

    /// Note when and from where a device was last seen.
    pub async fn touch_device(&self, id: String, at: crate::model::Timestamp, address: String) -> Result<()> {
        self.blocking(move |i| {
            i.store
                .write(Durability::Normal, |db| db.touch_device(&id, &at, &address), |_| ())
        })
        .await
    }
}
