import ContainerStore
import Foundation

/// Everything needed to reach a bucket, resolved as the AWS SDKs do: environment first
/// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or
/// AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_PROFILE), then the
/// profile in ~/.aws/credentials and ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE and
/// AWS_CONFIG_FILE move them). A custom endpoint is addressed path-style
/// (`http://host:port/bucket/key`), AWS itself virtual-hosted style.
public struct S3Settings: Sendable {
    public var location: S3Location
    public var credentials: S3Credentials
    public var region: String
    /// `http` or `https`.
    public var scheme: String
    public var host: String
    public var port: Int?
    public var pathStyle: Bool

    /// `allowPlainHTTP`: an `http://` endpoint at an AWS name is refused without it (signed
    /// requests, names and a plain container's content would travel in clear).
    public init(
        location: S3Location, credentials: S3Credentials, region: String, endpoint: String?, allowPlainHTTP: Bool = false
    ) throws(StoreError) {
        self.location = location
        self.credentials = credentials
        self.region = region
        if let endpoint {
            guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
                  let host = url.host, !host.isEmpty
            else {
                throw StoreError(code: .configuration, message: "the endpoint '\(endpoint)' is not an http(s)://HOST[:PORT] URL")
            }
            if scheme == "http" && Self.isAWS(host) && !allowPlainHTTP {
                throw StoreError(
                    code: .configuration,
                    message: "the endpoint '\(endpoint)' is AWS over plain http: requests, names and content would travel in clear; use https, or --allow-plain-http if you must"
                )
            }
            self.scheme = scheme
            self.host = host
            self.port = url.port
            pathStyle = true
        } else {
            scheme = "https"
            // Bucket names with dots do not match the wildcard certificate: path style then.
            pathStyle = location.bucket.contains(".")
            host = pathStyle ? "s3.\(region).amazonaws.com" : "\(location.bucket).s3.\(region).amazonaws.com"
            port = nil
        }
    }

    static func isAWS(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "amazonaws.com" || host.hasSuffix(".amazonaws.com") || host.hasSuffix(".amazonaws.com.cn")
    }

    /// What to warn of at mount: an endpoint over plain http (not this machine's loopback).
    public var plainHTTPWarning: String? {
        guard scheme == "http", !["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()), !host.hasPrefix("127.") else { return nil }
        return "the store \(endpointDescription) is reached over plain http: anyone on the way can read the requests, names and (unless the container is encrypted) the content"
    }

    /// From the environment and the AWS shared files.
    public static func resolve(
        _ location: S3Location, environment: [String: String] = ProcessInfo.processInfo.environment,
        allowPlainHTTP: Bool = false
    ) throws(StoreError) -> S3Settings {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        let home = value("HOME") ?? NSHomeDirectory()
        let profile = value("AWS_PROFILE") ?? value("AWS_DEFAULT_PROFILE") ?? "default"
        let credentialsFile = AWSProfileFile(path: value("AWS_SHARED_CREDENTIALS_FILE") ?? home + "/.aws/credentials")
        let configFile = AWSProfileFile(path: value("AWS_CONFIG_FILE") ?? home + "/.aws/config")
        let config = configFile?.configProfile(profile) ?? [:]

        let credentials: S3Credentials
        if let id = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") {
            credentials = S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: value("AWS_SESSION_TOKEN"))
        } else if let section = credentialsFile?.credentialsProfile(profile) ?? configFile?.configProfile(profile),
                  let id = section["aws_access_key_id"], let secret = section["aws_secret_access_key"] {
            credentials = S3Credentials(accessKeyID: id, secretAccessKey: secret, sessionToken: section["aws_session_token"])
        } else {
            throw StoreError(
                code: .configuration,
                message: "no credentials for \(location.description): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or profile '\(profile)' in ~/.aws/credentials"
            )
        }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? config["region"] ?? "us-east-1"
        let endpoint = value("AWS_ENDPOINT_URL_S3") ?? value("AWS_ENDPOINT_URL") ?? config["endpoint_url"]
        return try S3Settings(location: location, credentials: credentials, region: region, endpoint: endpoint, allowPlainHTTP: allowPlainHTTP)
    }

    /// Where requests go, for messages: never contains a secret.
    public var endpointDescription: String {
        "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }
}
