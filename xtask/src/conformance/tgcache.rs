//! tinygrad's results per case, cached in `target/conformance/tinygrad.json`. They depend only on the
//! generated cases and on the worker that runs them (tinygrad itself is pinned), so the cache is keyed
//! by the sha256 of the case index and of the worker script, and discarded when either changes.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use super::classify::TgStatus;

/// Case name → (status, detail).
pub type TgCache = BTreeMap<String, (TgStatus, String)>;

/// The cache file and its current contents.
pub struct Cache {
    path: PathBuf,
    key: String,
    results: TgCache,
}

impl Cache {
    /// Open `dir/tinygrad.json` for the cases in `cases_dir` run by `worker`; a cache for other
    /// cases or another worker reads as empty.
    pub fn open(dir: &Path, cases_dir: &Path, worker: &Path) -> Result<Cache> {
        let mut h = Sha256::new();
        for f in [cases_dir.join("index.json"), worker.to_path_buf()] {
            h.update(std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?);
        }
        let key = format!("{:x}", h.finalize());
        let path = dir.join("tinygrad.json");
        let results = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .filter(|v| v["key"].as_str() == Some(key.as_str()))
            .and_then(|v| serde_json::from_value(v["results"].clone()).ok())
            .unwrap_or_default();
        Ok(Cache { path, key, results })
    }

    pub fn get(&self, name: &str) -> Option<&(TgStatus, String)> {
        self.results.get(name)
    }

    /// Add `new` and write the file.
    pub fn extended(mut self, new: TgCache) -> Result<Cache> {
        self.results.extend(new);
        let doc = serde_json::json!({"key": self.key, "results": self.results});
        std::fs::write(&self.path, serde_json::to_string(&doc)?)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_survive_a_reopen_and_are_dropped_when_the_cases_change() {
        let dir = std::env::temp_dir().join(format!("modelrt-tgcache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (index, worker) = (dir.join("index.json"), dir.join("worker.py"));
        std::fs::write(&index, "{\"cases\": [1]}").unwrap();
        std::fs::write(&worker, "print()").unwrap();
        let c = Cache::open(&dir, &dir, &worker).unwrap();
        assert!(c.get("t").is_none());
        let new = TgCache::from([("t".to_string(), (TgStatus::Wrong, "differs".to_string()))]);
        c.extended(new).unwrap();
        let c = Cache::open(&dir, &dir, &worker).unwrap();
        assert_eq!(c.get("t"), Some(&(TgStatus::Wrong, "differs".to_string())));
        std::fs::write(&index, "{\"cases\": [2]}").unwrap();
        assert!(Cache::open(&dir, &dir, &worker).unwrap().get("t").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
