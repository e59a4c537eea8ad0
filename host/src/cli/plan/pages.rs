//! One listing of a kind, a page at a time, over every namespace in scope: `plan` holds one
//! page, never the whole list. A kind the API server does not serve (its CRD is not installed)
//! says so instead of failing.

use anyhow::Context as _;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

pub enum Page {
    Objects(Vec<Value>),
    /// The kind is not served here.
    NotServed,
}

pub struct Pages {
    scopes: std::vec::IntoIter<Api<DynamicObject>>,
    current: Option<(Api<DynamicObject>, ListParams)>,
    selector: Option<String>,
    limit: u32,
    what: &'static str,
}

impl Pages {
    /// `what` names the kind in errors; `selector` is a label selector, if any.
    pub fn new(
        client: &kube::Client,
        namespaces: &[String],
        resource: &ApiResource,
        what: &'static str,
        selector: Option<&str>,
        limit: u32,
    ) -> Pages {
        let scopes: Vec<Api<DynamicObject>> = match namespaces {
            [] => vec![Api::all_with(client.clone(), resource)],
            some => some
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, resource))
                .collect(),
        };
        Pages {
            scopes: scopes.into_iter(),
            current: None,
            selector: selector.map(str::to_owned),
            limit,
            what,
        }
    }

    /// The next page; None once every scope was listed.
    pub async fn next(&mut self) -> Option<anyhow::Result<Page>> {
        loop {
            if self.current.is_none() {
                let api = self.scopes.next()?;
                let mut params = ListParams::default().limit(self.limit);
                if let Some(selector) = &self.selector {
                    params = params.labels(selector);
                }
                self.current = Some((api, params));
            }
            let (api, params) = self.current.as_mut().expect("set above");
            let page = match api.list(params).await {
                Ok(page) => page,
                Err(kube::Error::Api(status)) if status.code == 404 => {
                    self.scopes = Vec::new().into_iter();
                    self.current = None;
                    return Some(Ok(Page::NotServed));
                }
                Err(error) => {
                    let what = self.what;
                    return Some(Err(error).context(format!("listing {what}")));
                }
            };
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => *params = params.clone().continue_token(&token),
                _ => self.current = None,
            }
            if page.items.is_empty() {
                continue;
            }
            let objects: Result<Vec<Value>, _> =
                page.items.into_iter().map(serde_json::to_value).collect();
            return Some(objects.map(Page::Objects).map_err(Into::into));
        }
    }
}
