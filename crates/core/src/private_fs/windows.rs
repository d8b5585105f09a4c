//! The rules of `private_fs` on Windows. A file or folder takes its
//! folder's inherited ACL when created, and outside the user's profile that
//! is usually "Authenticated Users: Modify": a token file there was readable
//! by every account (issue 38, finding 9). So what we create owner-only gets
//! a protected DACL of its own — the user and SYSTEM, nothing inherited —
//! set before a byte is written (a folder's entries inherit it); and a name
//! is opened as itself, never through a link or a junction
//! (`FILE_FLAG_OPEN_REPARSE_POINT`: a reparse point met where a file was
//! expected is refused). What this file does not do, and says so: an
//! existing file's owner is not compared with ours (an account cannot write
//! into another's profile), and no folder is reported as shared —
//! `docs/PLATFORMS.md`.

use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// Open a name as itself, not what a link or junction there points at.
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;

pub fn new_file_options() -> OpenOptions {
    use std::os::windows::fs::OpenOptionsExt;
    let mut options = OpenOptions::new();
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
    options
}

pub fn read_ours_options() -> OpenOptions {
    new_file_options()
}

/// A file opened as itself that is a link or a junction: refused.
pub fn refuse_link(file: &File, path: &Path) -> io::Result<()> {
    use std::os::windows::fs::MetadataExt;
    if file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::other(format!(
            "{} is a link or a junction, which local-mcp does not follow",
            path.display()
        )));
    }
    Ok(())
}

/// SYSTEM (S-1-5-18): the OS's own services keep access, as Windows gives
/// every profile's files.
const SYSTEM_SID: [u8; 12] = [1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0];

/// A DACL that lets in this account and SYSTEM only; `inherit`: its entries
/// pass to what is created inside (for a folder).
fn owner_only_dacl(inherit: bool) -> io::Result<Vec<u64>> {
    use windows_sys::Win32::Security::{
        AddAccessAllowedAceEx, InitializeAcl, ACL_REVISION, CONTAINER_INHERIT_ACE, OBJECT_INHERIT_ACE,
    };
    use windows_sys::Win32::Storage::FileSystem::FILE_ALL_ACCESS;
    let me = crate::peer::me()?;
    let mut acl = vec![0u64; 128]; // 1 KiB, aligned for the ACL header
    let size = (acl.len() * 8) as u32;
    // SAFETY: `acl` holds `size` bytes, which the calls initialise and fill.
    unsafe {
        if InitializeAcl(acl.as_mut_ptr().cast(), size, ACL_REVISION) == 0 {
            return Err(io::Error::last_os_error());
        }
        let flags = if inherit {
            OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE
        } else {
            0
        };
        for sid in [me.sid_bytes(), &SYSTEM_SID[..]] {
            let mut sid = sid.to_vec();
            if AddAccessAllowedAceEx(
                acl.as_mut_ptr().cast(),
                ACL_REVISION,
                flags,
                FILE_ALL_ACCESS,
                sid.as_mut_ptr().cast(),
            ) == 0
            {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(acl)
}

const DACL_ONLY: u32 = windows_sys::Win32::Security::DACL_SECURITY_INFORMATION
    | windows_sys::Win32::Security::PROTECTED_DACL_SECURITY_INFORMATION;

/// `root/dir/name`: `dir` must be a real folder (not a link or junction), and
/// `name` is opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`), so a link
/// there is a link, which the caller refuses as no regular file.
pub fn open_beneath(root: &Path, dir: &str, name: &str) -> io::Result<File> {
    use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
    let folder = root.join(dir);
    let meta = std::fs::symlink_metadata(&folder)?;
    if !meta.is_dir() || meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::other(format!("{} is not a folder", folder.display())));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(folder.join(name))?;
    if file.metadata()?.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(io::Error::other(format!("{} is a link", folder.join(name).display())));
    }
    Ok(file)
}

/// Opening a named pipe's path does not wait for its other end on Windows.
pub fn nonblocking_read_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    options
}

/// New files take their folder's ACL on Windows.
pub fn shared_file_permissions() -> Option<std::fs::Permissions> {
    None
}

pub fn other_owner(_: &Metadata) -> Option<String> {
    None
}

pub fn new_dir_builder() -> DirBuilder {
    DirBuilder::new()
}

/// A folder of ours gets the owner-only DACL, passed to what it holds.
pub fn make_dir_private(dir: &Path, _: &Metadata) -> io::Result<()> {
    use std::os::windows::ffi::OsStrExt;
    use windows_sys::Win32::Security::Authorization::{SetNamedSecurityInfoW, SE_FILE_OBJECT};
    let acl = owner_only_dacl(true)?;
    let mut wide: Vec<u16> = dir.as_os_str().encode_wide().chain(Some(0)).collect();
    // SAFETY: a NUL-terminated path and an initialised ACL that outlives the call.
    let rc = unsafe {
        SetNamedSecurityInfoW(
            wide.as_mut_ptr(),
            SE_FILE_OBJECT,
            DACL_ONLY,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            acl.as_ptr().cast(),
            std::ptr::null(),
        )
    };
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e as i32)),
    }
}

/// A file of ours gets the owner-only DACL, through a handle reopened with
/// the right to change it (the one given may lack it).
pub fn make_file_private(file: &File) -> io::Result<()> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::Security::Authorization::{SetSecurityInfo, SE_FILE_OBJECT};
    use windows_sys::Win32::Storage::FileSystem::{
        ReOpenFile, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, READ_CONTROL, WRITE_DAC,
    };
    let acl = owner_only_dacl(false)?;
    // SAFETY: a live handle of `file`; the new one is closed below.
    let handle = unsafe {
        ReOpenFile(
            file.as_raw_handle(),
            WRITE_DAC | READ_CONTROL,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            0,
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the handle just opened, and an initialised ACL that outlives the call.
    let rc = unsafe {
        SetSecurityInfo(
            handle,
            SE_FILE_OBJECT,
            DACL_ONLY,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            acl.as_ptr().cast(),
            std::ptr::null(),
        )
    };
    // SAFETY: ours, closed once.
    unsafe { CloseHandle(handle) };
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e as i32)),
    }
}

/// A new file: owner-only before its first byte (its folder's ACL may let
/// every account read it).
pub fn new_file(file: &File) -> io::Result<()> {
    make_file_private(file)
}

/// A new folder: owner-only, and so is what is created in it.
pub fn new_dir(dir: &Path) -> io::Result<()> {
    make_dir_private(dir, &std::fs::metadata(dir)?)
}

/// Windows has no umask: new files take their folder's inherited ACL, and
/// ours are given their own (`new_file`, `new_dir`).
pub fn restrict_umask() {}

/// A rename is durable on its own, and a folder cannot be opened to sync.
pub fn sync_dir(_: &Path) -> io::Result<()> {
    Ok(())
}

pub fn private_temp_dir(_: &mut tempfile::Builder<'_, '_>) {}

pub fn shared_writer(_: &Path) -> Option<String> {
    None
}

pub fn shared_file(_: &Path) -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SIDs the DACL of `path` lets in, and whether it is protected
    /// (inherits nothing); `None` where it cannot be read (Wine keeps no
    /// security descriptors for files on a Unix file system).
    fn dacl_of(path: &Path) -> Option<(Vec<Vec<u8>>, bool)> {
        use std::os::windows::ffi::OsStrExt;
        use windows_sys::Win32::Foundation::LocalFree;
        use windows_sys::Win32::Security::Authorization::{GetNamedSecurityInfoW, SE_FILE_OBJECT};
        use windows_sys::Win32::Security::{
            AclSizeInformation, GetAce, GetAclInformation, GetLengthSid, GetSecurityDescriptorControl,
            ACCESS_ALLOWED_ACE, ACL, ACL_SIZE_INFORMATION, DACL_SECURITY_INFORMATION, SE_DACL_PROTECTED,
        };
        let wide: Vec<u16> = path.as_os_str().encode_wide().chain(Some(0)).collect();
        let (mut dacl, mut descriptor): (*mut ACL, *mut core::ffi::c_void) =
            (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a NUL-terminated path; the descriptor returned is freed below.
        let rc = unsafe {
            GetNamedSecurityInfoW(
                wide.as_ptr(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut dacl,
                std::ptr::null_mut(),
                &mut descriptor,
            )
        };
        if rc != 0 || dacl.is_null() {
            return None;
        }
        let mut sids = Vec::new();
        let (mut control, mut revision) = (0u16, 0u32);
        // SAFETY: the DACL and descriptor the call above returned, read within their bounds.
        unsafe {
            let mut info: ACL_SIZE_INFORMATION = std::mem::zeroed();
            GetAclInformation(
                dacl,
                (&mut info as *mut ACL_SIZE_INFORMATION).cast(),
                std::mem::size_of::<ACL_SIZE_INFORMATION>() as u32,
                AclSizeInformation,
            );
            for i in 0..info.AceCount {
                let mut ace: *mut core::ffi::c_void = std::ptr::null_mut();
                if GetAce(dacl, i, &mut ace) != 0 {
                    let ace = ace.cast::<ACCESS_ALLOWED_ACE>();
                    let sid: *mut core::ffi::c_void = std::ptr::addr_of!((*ace).SidStart).cast_mut().cast();
                    sids.push(std::slice::from_raw_parts(sid.cast::<u8>(), GetLengthSid(sid) as usize).to_vec());
                }
            }
            GetSecurityDescriptorControl(descriptor, &mut control, &mut revision);
            LocalFree(descriptor);
        }
        Some((sids, control & SE_DACL_PROTECTED != 0))
    }

    #[test]
    fn what_we_create_lets_in_this_account_and_system_only() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("ours");
        super::super::private_dir(&folder).unwrap();
        let file = folder.join("token");
        super::super::create_new(&file).unwrap();
        let replaced = folder.join("connection.json");
        super::super::replace(&replaced, b"{}", super::super::Mode::Private).unwrap();
        let me = crate::peer::me().unwrap();
        for path in [&folder, &file, &replaced] {
            let Some((sids, protected)) = dacl_of(path) else {
                assert!(
                    crate::peer::under_wine(),
                    "the DACL of {} could not be read",
                    path.display()
                );
                eprintln!(
                    "skipped under Wine: it keeps no DACL for {} (docs/PLATFORMS.md)",
                    path.display()
                );
                continue;
            };
            let ours = vec![me.sid_bytes().to_vec(), SYSTEM_SID.to_vec()];
            if crate::peer::under_wine() {
                // Wine keeps no "protected" flag, so the parent's inheritable
                // entries join ours (Everyone, from its temp folder): ours must
                // be there; that nothing else is, only Windows can say
                // (docs/PLATFORMS.md).
                eprintln!("skipped under Wine: whether {} inherits", path.display());
                for sid in &ours {
                    assert!(sids.contains(sid), "{}: {sids:?}", path.display());
                }
            } else {
                assert!(protected, "{} inherits nothing", path.display());
                assert_eq!(sids, ours, "{}", path.display());
            }
        }
    }

    #[test]
    fn a_link_at_a_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.txt");
        std::fs::write(&target, "not ours to read").unwrap();
        let link = dir.path().join("state.json");
        if let Err(e) = std::os::windows::fs::symlink_file(&target, &link) {
            // Creating a link takes a privilege (or developer mode) on Windows.
            eprintln!("skipped: cannot create a symbolic link here ({e})");
            return;
        }
        let err = super::super::open_no_follow(&link).unwrap_err();
        // Wine cannot open a link itself (its links are Unix ones): the open
        // fails as "not found" there — refused too, in other words.
        assert!(err.to_string().contains("link") || crate::peer::under_wine(), "{err}");
        assert!(super::super::read_ours(&link, 100).is_err());
    }
}
