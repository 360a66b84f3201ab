// Package s3file is the scaled-out file.Storage: objects in a bucket of an
// S3-compatible object store (AWS S3, MinIO, Cloudflare R2, Alibaba OSS, …)
// through the AWS SDK for Go v2, the only package that imports it.
//
// An object is stored under the configured prefix plus its key (the
// content address). A Put is one PutObject with the exact length, which
// the store makes visible whole or not at all; a body that is not
// seekable is first spooled to a temporary file, because the SDK signs
// the payload (plain HTTP) or sends its checksum before the body. An open
// object reads lazily: the first Read after a Seek issues one GetObject
// from that offset (ranged unless at 0) and streams it, so serving a Range
// of a large file fetches that range, not the file. A whole-object read
// is checked against the object's checksum.
package s3file

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/agentchat/agentchat/internal/file"
)

// DefaultRegion is the region used when neither Config.Region nor the AWS
// configuration (AWS_REGION, ~/.aws/config) names one. S3-compatible stores
// mostly ignore it, but the request signature includes it.
const DefaultRegion = "us-east-1"

// Config says which bucket to use and how to reach it.
type Config struct {
	// Bucket holds the objects; it must exist. Required.
	Bucket string
	// Prefix is put before every key, so one bucket can serve several
	// deployments or other data ("agentchat/files/"); default none.
	Prefix string
	// Endpoint is the store's URL (https://<account>.r2.cloudflarestorage.com,
	// http://minio:9000); empty means AWS S3.
	Endpoint string
	// Region of the bucket; default the AWS configuration's, else DefaultRegion.
	Region string
	// AccessKeyID and SecretAccessKey, when set, are the credentials;
	// otherwise the AWS default chain is used (AWS_ACCESS_KEY_ID, shared
	// files, web identity, the instance's role).
	AccessKeyID, SecretAccessKey string
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// rather than as a subdomain; MinIO and most self-hosted stores need it.
	PathStyle bool
	// TempDir holds bodies spooled before upload; default os.TempDir().
	TempDir string
	// HTTPClient, when set, sends the requests (tests count them).
	HTTPClient *http.Client
}

// Storage keeps objects in a bucket.
type Storage struct {
	client *s3.Client
	cfg    Config
}

var _ file.Storage = (*Storage)(nil)

// Open makes the client and checks that the bucket can be reached, so a
// wrong endpoint, bucket or credential fails at startup, not at the first
// upload.
func Open(ctx context.Context, cfg Config) (*Storage, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 file storage: no bucket")
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" || cfg.SecretAccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 file storage: %w", err)
	}
	awsCfg.Region = cmp.Or(awsCfg.Region, DefaultRegion)
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(cfg.Bucket)}); err != nil {
		return nil, fmt.Errorf("s3 file storage: bucket %q: %w", cfg.Bucket, err)
	}
	return &Storage{client: client, cfg: cfg}, nil
}

func (s *Storage) objectKey(key string) *string { return aws.String(s.cfg.Prefix + key) }

// Put uploads the object with one PutObject of exactly size bytes.
func (s *Storage) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := file.CheckKey(key); err != nil {
		return err
	}
	body, done, err := s.seekable(ctx, r, size)
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	defer done()
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.cfg.Bucket),
		Key:           s.objectKey(key),
		Body:          body,
		ContentLength: aws.Int64(size),
		ContentType:   aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// seekable returns r as a seekable body holding exactly size bytes: r
// itself when it is a ReadSeeker at its start with size bytes left (the
// service's spooled upload), else a temporary file r is copied to.
func (s *Storage) seekable(ctx context.Context, r io.Reader, size int64) (io.ReadSeeker, func(), error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if cur, err := rs.Seek(0, io.SeekCurrent); err == nil && cur == 0 {
			end, err := rs.Seek(0, io.SeekEnd)
			if err != nil {
				return nil, nil, err
			}
			if _, err := rs.Seek(0, io.SeekStart); err != nil {
				return nil, nil, err
			}
			if end != size {
				return nil, nil, &file.SizeError{Want: size, Got: end}
			}
			return rs, func() {}, nil
		}
	}
	tmp, err := os.CreateTemp(s.cfg.TempDir, "agentchat-s3-*")
	if err != nil {
		return nil, nil, err
	}
	done := func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}
	if err := file.CopyExactly(tmp, ctxReader{ctx, r}, size); err != nil {
		done()
		return nil, nil, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		done()
		return nil, nil, err
	}
	return tmp, done, nil
}

// Open reads the object's size; its bytes are fetched as they are read.
func (s *Storage) Open(ctx context.Context, key string) (file.Object, error) {
	if err := file.CheckKey(key); err != nil {
		return nil, err
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: s.objectKey(key)})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, notFound(err))
	}
	return &object{ctx: ctx, s: s, key: key, size: aws.ToInt64(head.ContentLength)}, nil
}

// Delete removes the object; S3 answers a missing key with success.
func (s *Storage) Delete(ctx context.Context, key string) error {
	if err := file.CheckKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: s.objectKey(key)})
	if err = notFound(err); err != nil && !errors.Is(err, file.ErrNotFound) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Close does nothing: the client holds only idle connections.
func (s *Storage) Close() error { return nil }

// notFound maps the store's "no such key" answers to file.ErrNotFound:
// HeadObject has no body, so only its 404 status tells.
func notFound(err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var re *awshttp.ResponseError
	var api smithy.APIError
	switch {
	case errors.As(err, &nsk), errors.As(err, &nf),
		errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound"),
		errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound:
		return fmt.Errorf("%w (%v)", file.ErrNotFound, err)
	}
	return err
}

// object reads a stored object through ranged GETs: one per Read after a
// Seek, streamed until the next Seek or Close.
type object struct {
	// ctx is the Open's: the reads belong to the request that opened the
	// object, and stop when it ends.
	ctx  context.Context
	s    *Storage
	key  string
	size int64
	pos  int64
	body io.ReadCloser
}

func (o *object) Size() int64 { return o.size }

func (o *object) Read(p []byte) (int, error) {
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if o.body == nil {
		in := &s3.GetObjectInput{Bucket: aws.String(o.s.cfg.Bucket), Key: o.s.objectKey(o.key)}
		var opts []func(*s3.Options)
		if o.pos > 0 {
			// The object's checksum covers all of it, so the SDK cannot
			// check a part (some stores send it anyway); TLS guards a range.
			in.Range = aws.String(fmt.Sprintf("bytes=%d-", o.pos))
			opts = append(opts, func(o *s3.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired })
		}
		out, err := o.s.client.GetObject(o.ctx, in, opts...)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", o.key, notFound(err))
		}
		o.body = out.Body
	}
	n, err := o.body.Read(p)
	o.pos += int64(n)
	if errors.Is(err, io.EOF) && o.pos < o.size {
		err = fmt.Errorf("read %s: %w", o.key, io.ErrUnexpectedEOF)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		o.drop()
	}
	return n, err
}

func (o *object) Seek(offset int64, whence int) (int64, error) {
	pos, err := file.SeekTo(o.key, o.pos, o.size, offset, whence)
	if err != nil {
		return 0, err
	}
	if pos != o.pos {
		o.drop()
		o.pos = pos
	}
	return pos, nil
}

func (o *object) Close() error {
	o.drop()
	return nil
}

func (o *object) drop() {
	if o.body != nil {
		_ = o.body.Close()
		o.body = nil
	}
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
