//! The AWS credential endpoints a Bedrock client reaches through the SDKs' credential chain, on
//! loopback: STS `AssumeRole` and `AssumeRoleWithWebIdentity` (`POST /`, the awsQuery protocol:
//! a form body, an XML answer), IAM Identity Center's `GetRoleCredentials`
//! (`GET /federation/credentials`, JSON) and the ECS container credential endpoint
//! (`GET /v2/credentials/{id}`, JSON). Each answers fixed temporary keys per route (named in the
//! consts below) that expire an hour after the request, so a test can tell which source signed
//! the model request that followed.

use std::time::{Duration, SystemTime};

use crate::bedrock::percent_decode;

/// The access key id STS `AssumeRole` hands out.
pub const ASSUME_ROLE_KEY_ID: &str = "ASIAMOCKASSUMEDROLE";
/// The access key id STS `AssumeRoleWithWebIdentity` hands out.
pub const WEB_IDENTITY_KEY_ID: &str = "ASIAMOCKWEBIDENTITY";
/// The access key id SSO `GetRoleCredentials` hands out.
pub const SSO_KEY_ID: &str = "ASIAMOCKSSOROLE";
/// The access key id the ECS container endpoint hands out.
pub const ECS_KEY_ID: &str = "ASIAMOCKECSTASK";

/// How long the keys handed out are valid.
const LIFETIME: Duration = Duration::from_secs(3600);

/// An answer: status and body; `xml` picks the content type.
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
    pub xml: bool,
}

/// The form fields of an awsQuery body (`Action=AssumeRole&RoleArn=…`), decoded.
fn form(body: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |text: &str| percent_decode(&text.replace('+', " "));
            (decode(name), decode(value))
        })
        .collect()
}

/// `when` as STS writes timestamps (ISO 8601, UTC, whole seconds).
fn iso8601(when: SystemTime) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    time::OffsetDateTime::from(when)
        .format(&format)
        .unwrap_or_default()
}

/// XML text escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An STS error in its XML shape (`ErrorResponse`).
fn sts_error(status: u16, code: &str, message: &str, seq: u64) -> Answer {
    Answer {
        status,
        body: format!(
            "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n  <Error>\n    \
             <Type>Sender</Type>\n    <Code>{code}</Code>\n    <Message>{}</Message>\n  \
             </Error>\n  <RequestId>mock-sts-{seq}</RequestId>\n</ErrorResponse>\n",
            escape(message)
        ),
        xml: true,
    }
}

/// `POST /` with an awsQuery body: STS `AssumeRole` (signed by the caller's keys; `RoleArn` and
/// `RoleSessionName` required) or `AssumeRoleWithWebIdentity` (unsigned; also
/// `WebIdentityToken`). Other actions get STS's `InvalidAction`.
pub(crate) fn sts(body: &[u8], authorization: Option<&str>, seq: u64) -> Answer {
    let fields = form(body);
    let field = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    let action = field("Action").unwrap_or_default();
    let (required, key_id, extra): (&[&str], &str, &str) = match action {
        "AssumeRole" => (&["RoleArn", "RoleSessionName"], ASSUME_ROLE_KEY_ID, ""),
        "AssumeRoleWithWebIdentity" => (
            &["RoleArn", "RoleSessionName", "WebIdentityToken"],
            WEB_IDENTITY_KEY_ID,
            "    <SubjectFromWebIdentityToken>mock-subject</SubjectFromWebIdentityToken>\n    \
             <Audience>sts.amazonaws.com</Audience>\n    <Provider>mock-oidc</Provider>\n",
        ),
        other => {
            return sts_error(
                400,
                "InvalidAction",
                &format!("Could not find operation {other:?} for version 2011-06-15"),
                seq,
            )
        }
    };
    if let Some(missing) = required.iter().find(|name| field(name).is_none()) {
        return sts_error(
            400,
            "MissingParameter",
            &format!("The request must contain the parameter {missing}"),
            seq,
        );
    }
    if action == "AssumeRole" && !authorization.is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 "))
    {
        return sts_error(
            403,
            "MissingAuthenticationToken",
            "Request is missing Authentication Token",
            seq,
        );
    }
    let role_arn = field("RoleArn").unwrap_or_default();
    let session = field("RoleSessionName").unwrap_or_default();
    let assumed = role_arn
        .replacen(":iam::", ":sts::", 1)
        .replacen(":role/", ":assumed-role/", 1);
    let expiration = iso8601(SystemTime::now() + LIFETIME);
    Answer {
        status: 200,
        body: format!(
            "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n  \
             <{action}Result>\n{extra}    <AssumedRoleUser>\n      <Arn>{}/{}</Arn>\n      \
             <AssumedRoleId>AROAMOCK:{}</AssumedRoleId>\n    </AssumedRoleUser>\n    \
             <Credentials>\n      <AccessKeyId>{key_id}</AccessKeyId>\n      \
             <SecretAccessKey>mock-secret-{seq}</SecretAccessKey>\n      \
             <SessionToken>mock-session-{seq}</SessionToken>\n      \
             <Expiration>{expiration}</Expiration>\n    </Credentials>\n  </{action}Result>\n  \
             <ResponseMetadata>\n    <RequestId>mock-sts-{seq}</RequestId>\n  \
             </ResponseMetadata>\n</{action}Response>\n",
            escape(&assumed),
            escape(session),
            escape(session),
        ),
        xml: true,
    }
}

impl Answer {
    fn json(status: u16, body: serde_json::Value) -> Self {
        Answer {
            status,
            body: body.to_string(),
            xml: false,
        }
    }
}

/// `GET /federation/credentials?role_name=…&account_id=…` with the SSO access token in
/// `x-amz-sso_bearer_token`: IAM Identity Center's `GetRoleCredentials`.
pub(crate) fn sso_role_credentials(query: Option<&str>, bearer: Option<&str>, seq: u64) -> Answer {
    let params: Vec<(String, String)> = form(query.unwrap_or_default().as_bytes());
    let missing = ["role_name", "account_id"]
        .into_iter()
        .find(|name| !params.iter().any(|(n, v)| n == name && !v.is_empty()));
    if let Some(name) = missing {
        return Answer::json(
            400,
            serde_json::json!({"message": format!("missing query parameter {name}")}),
        );
    }
    if bearer.is_none_or(str::is_empty) {
        return Answer::json(
            401,
            serde_json::json!({"message": "Session token not found or invalid"}),
        );
    }
    let expiration = SystemTime::now() + LIFETIME;
    let millis = expiration
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    Answer::json(
        200,
        serde_json::json!({"roleCredentials": {
            "accessKeyId": SSO_KEY_ID,
            "secretAccessKey": format!("mock-secret-{seq}"),
            "sessionToken": format!("mock-session-{seq}"),
            "expiration": millis,
        }}),
    )
}

/// `GET /v2/credentials/{id}`: the ECS container credential endpoint
/// (`AWS_CONTAINER_CREDENTIALS_FULL_URI` points here).
pub(crate) fn ecs_credentials(seq: u64) -> Answer {
    Answer::json(
        200,
        serde_json::json!({
            "AccessKeyId": ECS_KEY_ID,
            "SecretAccessKey": format!("mock-secret-{seq}"),
            "Token": format!("mock-session-{seq}"),
            "Expiration": iso8601(SystemTime::now() + LIFETIME),
            "RoleArn": "arn:aws:iam::123456789012:role/mock-task",
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assume_role_answers_in_sts_xml() {
        let answer = sts(
            b"Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&RoleSessionName=s",
            Some("AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sts/aws4_request"),
            3,
        );
        assert_eq!(answer.status, 200);
        assert!(answer.xml);
        assert!(
            answer.body.starts_with("<AssumeRoleResponse "),
            "{}",
            answer.body
        );
        assert!(answer
            .body
            .contains("<Arn>arn:aws:sts::1:assumed-role/r/s</Arn>"));
        assert!(answer
            .body
            .contains(&format!("<AccessKeyId>{ASSUME_ROLE_KEY_ID}</AccessKeyId>")));
        let unsigned = sts(b"Action=AssumeRole&RoleArn=a&RoleSessionName=s", None, 4);
        assert_eq!(unsigned.status, 403);
        let missing = sts(
            b"Action=AssumeRoleWithWebIdentity&RoleArn=a&RoleSessionName=s",
            None,
            5,
        );
        assert_eq!(missing.status, 400);
        assert!(
            missing.body.contains("WebIdentityToken"),
            "{}",
            missing.body
        );
        assert_eq!(sts(b"Action=GetCallerIdentity", None, 6).status, 400);
    }

    #[test]
    fn sso_needs_the_token_and_the_role() {
        let ok = sso_role_credentials(Some("role_name=r&account_id=1"), Some("t"), 1);
        assert_eq!(ok.status, 200);
        assert!(ok.body.contains(SSO_KEY_ID));
        assert_eq!(
            sso_role_credentials(Some("role_name=r&account_id=1"), None, 1).status,
            401
        );
        assert_eq!(
            sso_role_credentials(Some("role_name=r"), Some("t"), 1).status,
            400
        );
    }

    #[test]
    fn timestamps_are_iso8601() {
        assert_eq!(
            iso8601(SystemTime::UNIX_EPOCH + Duration::from_secs(86_400 + 61)),
            "1970-01-02T00:01:01Z"
        );
    }
}
